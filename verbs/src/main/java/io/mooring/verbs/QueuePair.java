package io.mooring.verbs;

import io.mooring.lifecycle.DestroyAction;
import io.mooring.lifecycle.Resource;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.spi.QpOps;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;

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
    private final QpQueues queues;
    private final SharedReceiveQueue srq; // null: it has its own receive queue
    private volatile int psn = freshPsn(-1); // the next connection's send PSN, unless one is chosen; new at reset
    private final Object modifyLock = new Object();

    QueuePair(ProtectionDomain pd, QpOps ops, Resource resource, CompletionQueue sendCq, CompletionQueue recvCq,
              QpCapabilities capabilities, QpQueues queues, SharedReceiveQueue srq) {
        super(resource);
        this.srq = srq;
        this.pd = pd;
        this.ops = ops;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.capabilities = capabilities;
        this.queues = queues;
        queues.ops = ops;
        pd.context().queuePairs.put(ops.qpNumber(), queues);
    }

    /**
     * Destroys the native QP, then forgets its outstanding requests: once {@code ibv_destroy_qp} returned the
     * NIC no longer touches their memory, so their regions are released and their futures failed. The receives of
     * a shared receive queue stay posted for the other QPs on it. Holding the QP's queue locks throughout: a post in
     * progress finishes first, and one after it finds its queue closed, never the destroyed native QP.
     */
    static DestroyAction destroyAction(QpOps qp, QpQueues queues, QpTable table) {
        return () -> {
            lock(queues);
            try {
                qp.destroy();
                table.remove(qp.qpNumber(), queues);
                String reason = "qpn " + qp.qpNumber() + " was destroyed before this request completed";
                queues.send.discardAll(reason, true);
                if (!queues.shared) queues.receive.discardAll(reason, true);
            } finally {
                unlock(queues);
            }
        };
    }

    /**
     * Fails the requests of {@code queues} whose completions go to {@code cq}, which can no longer be polled: nothing
     * would complete them. A QP in ERROR or RESET has them discarded, as a reset does: the NIC only flushes them (into
     * that CQ) or has forgotten them, and touches their memory no more — an overrun moves every QP that lost a
     * completion to ERROR. Any other QP may still be working on them: their futures fail, but their regions stay pinned
     * until a reset or destroy. A shared receive queue's receives are left alone: a QP on another CQ may take them.
     */
    static void cqFailed(QpQueues queues, CompletionRouter cq, String reason) {
        boolean send = queues.sendCq == cq;
        boolean receive = !queues.shared && queues.recvCq == cq;
        if (!send && !receive) return;
        lock(queues); // no modify changes the state meanwhile (the NIC only moves it to ERROR), no post slips in
        try {
            if (queues.send.closedReason != null) return; // destroyed meanwhile: nothing is left
            QpState s;
            try {
                s = queues.ops.state();
            } catch (RuntimeException e) {
                s = null; // unknown: the NIC may be working on them
            }
            boolean idle = s == QpState.ERROR || s == QpState.RESET;
            if (send) failOrDiscard(queues.send, idle, reason);
            if (receive) failOrDiscard(queues.ownReceive(), idle, reason);
        } finally {
            unlock(queues);
        }
    }

    private static void failOrDiscard(InFlight queue, boolean discard, String reason) {
        if (discard) queue.discardAllLocked(reason);
        else queue.failFuturesLocked(reason);
    }

    /** Takes the QP's queue locks (send, then its own receive queue's), which every post and modify hold. */
    private static void lock(QpQueues queues) {
        queues.send.lock.lock();
        if (!queues.shared) queues.receive.lock.lock();
    }

    private static void unlock(QpQueues queues) {
        if (!queues.shared) queues.receive.lock.unlock();
        queues.send.lock.unlock();
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

    // ---- connection ------------------------------------------------------------------------------------------

    /**
     * What the peer needs to connect to this QP, for the port, GID index and send PSN of {@code options}. Take it
     * after the last {@link #reset}, which draws a new PSN and changes the {@link QpInfo#token token}.
     */
    public QpInfo info(ConnectOptions options) {
        PortAttributes port = pd.context().port(options.port());
        return new QpInfo(number(), sendPsn(options), pd.context().gid(options.port(), options.gidIndex()), port.lid(),
                port.activeMtu(), ops.token());
    }

    /** {@link #info(ConnectOptions)} with {@link ConnectOptions#DEFAULT}. */
    public QpInfo info() {
        return info(ConnectOptions.DEFAULT);
    }

    /** The PSN this QP sends from when connected with {@code options}: the chosen one, else the one drawn at reset. */
    private int sendPsn(ConnectOptions options) {
        return options.sendPsn().orElse(psn);
    }

    /**
     * RESET → INIT, allowing the peer {@code options.access()}. All of {@code options} is checked against the device
     * first (also what RTR and RTS will use), so that refused options leave the QP in RESET.
     *
     * @throws IllegalArgumentException naming an option the device cannot do, its value and the device's limit
     */
    public void init(ConnectOptions options) {
        options.requireSupportedBy(pd.context());
        modify(new QpAttributes().state(QpState.INIT).port(options.port()).pkeyIndex(options.pkeyIndex())
                .access(options.access()));
    }

    /** INIT → RTR: ready to receive from {@code remote}. */
    public void readyToReceive(QpInfo remote, ConnectOptions options) {
        options.requireSupportedBy(pd.context());
        PortAttributes port = pd.context().port(options.port());
        Mtu path = remote.mtu().bytes() < port.activeMtu().bytes() ? remote.mtu() : port.activeMtu();
        Gid source = pd.context().gid(options.port(), options.gidIndex());
        int gidIndex = options.gidIndex() >= 0 ? options.gidIndex() : port.gids().indexOf(source);
        modify(new QpAttributes().state(QpState.RTR).pathMtu(path).destQpNumber(remote.qpn())
                .receivePsn(remote.psn()).maxDestRdAtomic(options.maxDestRdAtomic()).minRnrTimer(options.minRnrTimer())
                // RoCE v2 needs a global route: the peer's GID as destination, ours by table index as source
                .destGid(remote.gid()).destLid(remote.lid()).destToken(remote.token())
                .sourceGidIndex(Math.max(gidIndex, 0)).hopLimit(options.hopLimit())
                .trafficClass(options.trafficClass()).serviceLevel(options.serviceLevel()));
    }

    /**
     * RTR → RTS: ready to send, from the PSN {@link #info(ConnectOptions)} gave the peer. From SQD (after
     * {@link #drainSendQueue}) or RTS it resumes sending where the QP stopped: the send PSN and the retry attributes
     * stay as the connection set them (a NIC takes none of them in those transitions, and a PSN set back to the
     * first one would make the peer take every later request for a retransmission, acknowledged and dropped).
     */
    public void readyToSend(ConnectOptions options) {
        options.requireSupportedBy(pd.context());
        var toRts = new QpAttributes().state(QpState.RTS);
        modify(now -> now != QpState.RTR ? toRts : toRts.sendPsn(sendPsn(options)).timeout(options.timeout())
                .retryCount(options.retryCount()).rnrRetry(options.rnrRetry()).maxRdAtomic(options.maxRdAtomic()));
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
        modify(new QpAttributes().state(QpState.ERROR));
    }

    /**
     * Any state → RESET: outstanding requests are discarded without completions (their futures fail), and the QP
     * draws a new random PSN for its next connection, so that packets of the old one still in the fabric do not
     * fall into the new one's sequence.
     */
    public void reset() {
        synchronized (modifyLock) {
            modify(new QpAttributes().state(QpState.RESET));
            psn = freshPsn(psn);
        }
        String reason = "qpn " + number() + " was reset before this request completed";
        queues.send.discardAll(reason, false);
        if (!queues.shared) queues.receive.discardAll(reason, false);
    }

    /** RTS → SQD: the send queue stops taking new requests from the queue once in-flight ones finish. */
    public void drainSendQueue() {
        modify(new QpAttributes().state(QpState.SQD));
    }

    /**
     * The QP's attributes as the device reports them ({@code ibv_query_qp}): its state, what the connection set (a
     * device may have granted more than asked, e.g. rxe rounds READ/atomic depths up to a power of 2), and the PSNs
     * as they are now — the next one to send and the next one expected, which move with the traffic.
     */
    public QpAttributes query() {
        resource.checkOpen();
        return ops.query();
    }

    /**
     * The QP state machine, checked here only: the transition against the device's current state, under the queue
     * locks so that every post sees the state before or after it ({@link #requireAccepts}).
     */
    private void modify(QpAttributes a) {
        modify(now -> a);
    }

    /** {@link #modify(QpAttributes)} with the attributes that the transition from the current state takes. */
    private void modify(Function<QpState, QpAttributes> attributesFrom) {
        resource.checkOpen();
        synchronized (modifyLock) {
            lock(queues);
            try {
                QpState now = ops.state();
                QpAttributes a = attributesFrom.apply(now);
                if (!now.canMoveTo(a.state())) {
                    throw new QpStateException("ibv_modify_qp", toString(), now, "moving to " + a.state());
                }
                ops.modify(a);
                queues.known = a.state();
                queues.errorSeen = false;
            } finally {
                unlock(queues);
            }
        }
    }

    /**
     * Refuses a post that the QP's state does not take (caller holds the queue's lock). The state is the one last
     * set; if that refuses, the device is asked, since it may have moved the QP to ERROR, which takes posts (and
     * flushes them).
     */
    private void requireAccepts(RequestSlots queue, boolean send) {
        if (queue.closedReason != null) throw new IllegalStateException(this + ": " + queue.closedReason);
        CompletionQueue cq = send ? sendCq : recvCq;
        if (cq.router().overrun) {
            throw new VerbsException(send ? "ibv_post_send" : "ibv_post_recv", Errno.EIO.number(), toString(),
                    "its " + (send ? "send" : "receive") + " CQ " + cq + " overran its capacity of " + cq.capacity()
                    + " (IBV_EVENT_CQ_ERR): completions were lost and its QPs go to ERROR; destroy them and"
                    + " the CQ, and size a CQ for the queue depths of every QP on it");
        }
        QpState s = queues.known;
        if (send ? s.acceptsSends() : s.acceptsReceives()) return;
        s = ops.state();
        if (send ? s.acceptsSends() : s.acceptsReceives()) return;
        throw new QpStateException(send ? "ibv_post_send" : "ibv_post_recv", toString(), s,
                send ? "posting a send" : "posting a receive");
    }

    /** A random 24-bit PSN other than {@code previous}. */
    private static int freshPsn(int previous) {
        int next;
        do {
            next = ThreadLocalRandom.current().nextInt(QpAttributes.MAX_PSN + 1);
        } while (next == previous);
        return next;
    }

    // ---- posting ---------------------------------------------------------------------------------------------

    /**
     * Posts a send-queue request; its completion goes to whoever polls the send CQ.
     *
     * @throws QueueFullException       if the send queue holds its depth of outstanding requests
     * @throws QpStateException         if the QP does not accept sends in its state (RESET, INIT, RTR)
     * @throws IllegalArgumentException if the request has more entries or inline bytes than the QP allows
     */
    public void post(WorkRequest request) {
        postSend(request, null);
    }

    /** Posts a signaled send-queue request and returns a future for its completion. */
    public CompletableFuture<WorkCompletion> postAsync(WorkRequest request) {
        if (!request.isSignaled()) {
            throw new IllegalArgumentException("postAsync needs a signaled request: an unsignaled one never completes");
        }
        CompletableFuture<WorkCompletion> future = sendCq.newFuture();
        postSend(request, future);
        return future;
    }

    /**
     * Posts a receive request; its completion goes to whoever polls the receive CQ.
     *
     * @throws IllegalStateException if its receives come from a shared receive queue: post them there
     */
    public void post(ReceiveRequest request) {
        postReceive(request, null);
    }

    /** Posts a receive request and returns a future for its completion. */
    public CompletableFuture<WorkCompletion> postAsync(ReceiveRequest request) {
        CompletableFuture<WorkCompletion> future = recvCq.newFuture();
        postReceive(request, future);
        return future;
    }

    private void postSend(WorkRequest wr, CompletableFuture<WorkCompletion> future) {
        resource.checkOpen();
        ScatterGatherList sgl = wr.sgl();
        if (sgl.count() > capabilities.maxSendSge()) {
            throw new IllegalArgumentException(sgl.count() + " scatter/gather entries exceed maxSendSge "
                    + capabilities.maxSendSge() + " of " + this);
        }
        if (wr.opcode() == Opcode.BIND_MW && wr.window() == null) {
            throw new IllegalArgumentException("a BIND_MW request names no window and region: build it with"
                    + " WorkRequest.bind(window, region, offset, length, access), not opcode(BIND_MW)");
        }
        if (wr.isInline() && sgl.totalLength() > capabilities.maxInlineData()) {
            throw new IllegalArgumentException(sgl.totalLength() + " inline bytes exceed maxInlineData "
                    + capabilities.maxInlineData() + " of " + this);
        }
        InFlight send = queues.send;
        send.lock.lock();
        try {
            requireAccepts(send, true);
            if (wr.opcode() == Opcode.BIND_MW) {
                postBind(wr, future, send);
                return;
            }
            InFlight.Outcome outcome = wr.opcode() == Opcode.LOCAL_INV ? invalidation(wr.invalidateRkey()) : null;
            long id = send.claim("ibv_post_send", this, wr.wrId(), wr.opcode().completion(), sgl, null,
                    future, outcome);
            try {
                ops.postSend(wr, id);
            } catch (RuntimeException e) {
                send.unclaim();
                throw e;
            }
        } finally {
            send.lock.unlock();
        }
    }

    /** Updates the window reached by {@code rkey} (if it is one of ours) when the invalidate completes. */
    private InFlight.Outcome invalidation(int rkey) {
        MemoryWindow.State window = pd.windowsByRkey.get(rkey);
        return window == null ? null : success -> {
            if (success) window.invalidated(rkey);
        };
    }

    private void postBind(WorkRequest wr, CompletableFuture<WorkCompletion> future, InFlight send) {
        MemoryWindow window = wr.window();
        MemoryRegion region = wr.bindRegion();
        if (window.pd() != pd || region.pd() != pd) {
            throw new IllegalArgumentException("cannot bind " + window + " over " + region + " on " + this
                    + ": window, region and QP must share one protection domain");
        }
        int[] key = new int[1]; // taken at the post itself, below: a bind refused before it takes no key
        // Held until the bind retires: the NIC must never be handed a deallocated window (a closed one is refused
        // here), nor have the window deallocated under the bind.
        window.resource().addPin();
        try {
            region.resource().addPin(); // the binding's own hold, adopted by the window when the bind succeeds
        } catch (RuntimeException e) {
            window.resource().removePin();
            throw e;
        }
        InFlight.Outcome outcome = success -> {
            if (success) {
                window.state().bound(key[0], region, type2Hold(window));
                window.ops().bound(key[0]);
            } else {
                region.resource().removePin();
            }
            window.resource().removePin(); // after bound(): a window closed meanwhile unbinds when it is destroyed
        };
        long id;
        try {
            id = send.claim("ibv_post_send", this, wr.wrId(), WcOpcode.BIND_MW, wr.sgl(), region, future, outcome);
        } catch (RuntimeException e) {
            region.resource().removePin();
            window.resource().removePin();
            throw e;
        }
        int posted = key[0] = window.nextRkey();
        try {
            key[0] = ops.bindWindow(window.ops(), region.ops(), region.address() + wr.bindOffset(), wr.bindLength(),
                    wr.bindAccess(), posted, id, wr.isSignaled());
        } catch (RuntimeException e) {
            window.state().unpost(posted);
            send.unclaim();
            throw e;
        }
    }

    /**
     * This QP, pinned for a type 2 window that a bind through it just gave a key (see {@link MemoryWindow}); null
     * for type 1, or if the QP was closed while the bind was in flight (it is being destroyed: it cannot be held).
     * Taken when the bind succeeds, not when it is posted: a hold from the post would keep a QP closed before its
     * bind was polled from ever being destroyed, and its destroy is what retires unpolled requests.
     */
    private QueuePair type2Hold(MemoryWindow window) {
        if (window.type() != MwType.TYPE_2) return null;
        try {
            resource.addPin();
            return this;
        } catch (ResourceClosedException e) {
            return null;
        }
    }

    private void postReceive(ReceiveRequest rr, CompletableFuture<WorkCompletion> future) {
        resource.checkOpen();
        if (srq != null) {
            throw new IllegalStateException(this + " takes its receives from " + srq + "; post them there");
        }
        if (rr.sgl().count() > capabilities.maxRecvSge()) {
            throw new IllegalArgumentException(rr.sgl().count() + " scatter/gather entries exceed maxRecvSge "
                    + capabilities.maxRecvSge() + " of " + this);
        }
        InFlight receive = queues.ownReceive();
        receive.lock.lock();
        try {
            requireAccepts(receive, false);
            long id = receive.claim("ibv_post_recv", this, rr.wrId(), WcOpcode.RECV, rr.sgl(), null, future, null);
            try {
                ops.postRecv(rr, id);
            } catch (RuntimeException e) {
                receive.unclaim();
                throw e;
            }
            if (queues.known == QpState.ERROR || queues.errorSeen) flushIfInError();
        } finally {
            receive.lock.unlock();
        }
    }

    /**
     * A receive posted to a QP in ERROR must complete with WR_FLUSH_ERR. A driver whose {@code post_recv} only
     * writes the user-mapped queue (rxe) does not tell the kernel, which flushes only when its responder next runs;
     * moving the QP to ERROR again (allowed from any state) makes it run. Only on this rare path: the state is known
     * to be ERROR, or asked for when an error completion was seen. Caller holds the receive lock, so no modify runs.
     */
    private void flushIfInError() {
        if (ops.state() != QpState.ERROR) {
            queues.errorSeen = false;
            return;
        }
        ops.modify(new QpAttributes().state(QpState.ERROR));
        queues.known = QpState.ERROR;
    }

    /** Outstanding (posted, not yet completed) requests on the send queue. */
    public int outstandingSends() {
        return queues.send.outstanding();
    }

    /** Outstanding requests on the receive queue: for a QP on a shared receive queue, that queue's. */
    public int outstandingReceives() {
        return queues.receive.outstanding();
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
