package io.mooring.verbs;

import io.mooring.lifecycle.Resource;
import io.mooring.verbs.spi.QpOps;
import io.mooring.verbs.testing.FaultInjection;
import io.mooring.verbs.testing.FaultPlan;
import io.mooring.verbs.values.QpAttributes;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.QpState;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * A reliable-connected queue pair ({@code struct ibv_qp}). Created in RESET; {@link #connect} takes it through
 * INIT, RTR and RTS with the peer's {@link QpInfo}. Transitions a NIC does not allow are refused with
 * {@link QpStateException} naming the state.
 *
 * <p>Posting never blocks and never allocates in the provider: each queue holds at most its depth of
 * outstanding requests ({@link QueueFullException} past it). {@link #post} leaves the completion to whoever
 * polls the CQ; {@link #postAsync} returns a future completed by the poll that sees it (normally the CQ's
 * {@link CompletionDispatcher}), exceptionally with {@link WorkCompletionException} on an error status. The
 * regions a request names stay registered until it completes. Posts are thread-safe.
 */
public final class QueuePair extends VerbsObject {
    private final ProtectionDomain pd;
    private final QpOps ops;
    private final CompletionQueue sendCq;
    private final CompletionQueue recvCq;
    private final QpCapabilities capabilities;
    private final SharedReceiveQueue srq; // null: it has its own receive queue
    private final QpConnector connector;
    private final SendQueue sendQueue;
    private final ReceiveQueue receiveQueue;

    QueuePair(ProtectionDomain pd, QpOps ops, Resource resource, CompletionQueue sendCq, CompletionQueue recvCq,
              QpCapabilities capabilities, QpQueues queues, SharedReceiveQueue srq) {
        super(resource);
        this.srq = srq;
        this.pd = pd;
        this.ops = ops;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.capabilities = capabilities;
        this.connector = new QpConnector(this, ops, queues, pd.context());
        this.sendQueue = new SendQueue(this, ops, queues, sendCq, capabilities);
        this.receiveQueue = new ReceiveQueue(this, ops, queues, recvCq, capabilities, srq);
        queues.ops = ops;
        pd.context().queuePairs.put(ops.qpNumber(), queues);
    }

    public ProtectionDomain pd() {
        return pd;
    }

    public int number() {
        return ops.qpNumber();
    }

    /** The current state; the NIC moves a QP to ERROR on its own when a request fails. */
    public QpState state() {
        resource.checkOpen();
        return ops.state();
    }

    public QpCapabilities capabilities() {
        return capabilities;
    }

    public CompletionQueue sendCq() {
        return sendCq;
    }

    public CompletionQueue recvCq() {
        return recvCq;
    }

    /** The shared receive queue its receives come from, if it was created with one. */
    public Optional<SharedReceiveQueue> sharedReceiveQueue() {
        return Optional.ofNullable(srq);
    }

    // ---- connection: the state transitions (QpConnector) -----------------------------------------------------

    /**
     * What the peer needs to connect to this QP, for the port, GID index and send PSN of {@code options}. Take it
     * after the last {@link #reset}, which draws a new PSN and changes the {@link QpInfo#token token}.
     */
    public QpInfo info(ConnectOptions options) {
        return connector.info(options);
    }

    /** {@link #info(ConnectOptions)} with {@link ConnectOptions#DEFAULT}. */
    public QpInfo info() {
        return info(ConnectOptions.DEFAULT);
    }

    /**
     * RESET → INIT, allowing the peer {@code options.access()}. All of {@code options} is checked against the device
     * first (also what RTR and RTS will use), so that refused options leave the QP in RESET.
     *
     * @throws IllegalArgumentException naming an option the device cannot do, its value and the device's limit
     */
    public void init(ConnectOptions options) {
        connector.init(options);
    }

    /** INIT → RTR: ready to receive from {@code remote}. */
    public void readyToReceive(QpInfo remote, ConnectOptions options) {
        connector.readyToReceive(remote, options);
    }

    /**
     * RTR → RTS: ready to send, from the PSN {@link #info(ConnectOptions)} gave the peer. From SQD (after
     * {@link #drainSendQueue}) or RTS it resumes sending where the QP stopped: the send PSN and the retry attributes
     * stay as the connection set them (a NIC takes none of them in those transitions, and a PSN set back to the
     * first one would make the peer take every later request for a retransmission, acknowledged and dropped).
     */
    public void readyToSend(ConnectOptions options) {
        connector.readyToSend(options);
    }

    /** RESET → INIT → RTR → RTS towards {@code remote}. */
    public void connect(QpInfo remote, ConnectOptions options) {
        init(options);
        readyToReceive(remote, options);
        readyToSend(options);
    }

    /** {@link #connect(QpInfo, ConnectOptions)} with {@link ConnectOptions#DEFAULT}. */
    public void connect(QpInfo remote) {
        connect(remote, ConnectOptions.DEFAULT);
    }

    /** Any state → ERROR: every outstanding request completes with WR_FLUSH_ERR. */
    public void moveToError() {
        connector.modify(QpState.ERROR);
    }

    /**
     * Any state → RESET: outstanding requests are discarded without completions (their futures fail with a
     * {@link QpResetException}), and the QP draws a new random PSN for its next connection, so that packets of the
     * old one still in the fabric do not fall into the new one's sequence.
     */
    public void reset() {
        connector.reset();
    }

    /** RTS → SQD: the send queue stops taking new requests from the queue once in-flight ones finish. */
    public void drainSendQueue() {
        connector.modify(QpState.SQD);
    }

    /**
     * The QP's attributes as the device reports them ({@code ibv_query_qp}): its state, what the connection set (a
     * device may have granted more than asked, e.g. rxe rounds READ/atomic depths up to a power of 2), and the PSNs
     * as they are now — the next one to send and the next one expected, which move with the traffic.
     */
    public QpAttributes query() {
        return connector.query();
    }

    // ---- posting: the send queue (SendQueue) and the receive queue (ReceiveQueue) ------------------------------

    /**
     * Posts a send-queue request; its completion goes to whoever polls the send CQ.
     *
     * @throws QueueFullException       if the send queue holds its depth of outstanding requests
     * @throws QpStateException         if the QP does not accept sends in its state (RESET, INIT, RTR)
     * @throws IllegalArgumentException if the request has more entries or inline bytes than the QP allows
     */
    public void post(WorkRequest request) {
        sendQueue.post(request, null);
    }

    /** Posts a signaled send-queue request and returns a future for its completion. */
    public CompletableFuture<WorkCompletion> postAsync(WorkRequest request) {
        return sendQueue.postAsync(request);
    }

    /**
     * Posts a receive request; its completion goes to whoever polls the receive CQ.
     *
     * @throws IllegalStateException if its receives come from a shared receive queue: post them there
     */
    public void post(ReceiveRequest request) {
        receiveQueue.post(request, null);
    }

    /** Posts a receive request and returns a future for its completion. */
    public CompletableFuture<WorkCompletion> postAsync(ReceiveRequest request) {
        return receiveQueue.postAsync(request);
    }

    /** Outstanding (posted, not yet completed) requests on the send queue. */
    public int outstandingSends() {
        return sendQueue.outstanding();
    }

    /** Outstanding requests on the receive queue: for a QP on a shared receive queue, that queue's. */
    public int outstandingReceives() {
        return receiveQueue.outstanding();
    }

    /**
     * Injects faults per {@code plan} into this queue pair's traffic: the request packets it sends and their
     * answers, and its responder's receives. Soft provider only.
     *
     * @throws UnsupportedOperationException on a provider other than soft
     * @throws IllegalStateException if faults are injected into it already (its own or its device's)
     */
    public FaultInjection injectFaults(FaultPlan plan) {
        Objects.requireNonNull(plan, "plan");
        resource.checkOpen();
        return new FaultInjection(ops.injectFaults(plan), plan, toString());
    }

    @Override
    public String toString() {
        return resource.info().name() + " (qpn " + ops.qpNumber() + ")";
    }
}
