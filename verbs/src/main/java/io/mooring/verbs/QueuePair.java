package io.mooring.verbs;

import io.mooring.lifecycle.DestroyAction;
import io.mooring.lifecycle.Resource;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.spi.QpOps;
import io.mooring.verbs.spi.QpTransition;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;

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
    private final CompletionRouter.QpQueues queues;
    private final int psn = ThreadLocalRandom.current().nextInt(1 << 24);
    private final Object modifyLock = new Object();

    QueuePair(ProtectionDomain pd, QpOps ops, Resource resource, CompletionQueue sendCq, CompletionQueue recvCq,
              QpCapabilities capabilities, CompletionRouter.QpQueues queues) {
        super(resource);
        this.pd = pd;
        this.ops = ops;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.capabilities = capabilities;
        this.queues = queues;
        sendCq.router().register(ops.qpNumber(), queues);
        recvCq.router().register(ops.qpNumber(), queues);
    }

    /**
     * Destroys the native QP, then forgets its outstanding requests: once {@code ibv_destroy_qp} returned the
     * NIC no longer touches their memory, so their regions are released and their futures failed.
     */
    static DestroyAction destroyAction(QpOps qp, CompletionRouter.QpQueues queues, CompletionRouter sendCq,
                                       CompletionRouter recvCq) {
        return () -> {
            qp.destroy();
            sendCq.unregister(qp.qpNumber());
            recvCq.unregister(qp.qpNumber());
            String reason = "qpn " + qp.qpNumber() + " was destroyed before this request completed";
            queues.send().discardAll(reason, true);
            queues.receive().discardAll(reason, true);
        };
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

    // ---- connection ------------------------------------------------------------------------------------------

    /**
     * What the peer needs to connect to this QP, for the port and GID index of {@code options}. Take it after the
     * last {@link #reset}, which changes its {@link QpInfo#token token}.
     */
    public QpInfo info(ConnectOptions options) {
        PortAttributes port = pd.context().port(options.port());
        return new QpInfo(number(), psn, pd.context().gid(options.port(), options.gidIndex()), port.lid(),
                port.activeMtu(), ops.token());
    }

    /** {@link #info(ConnectOptions)} with {@link ConnectOptions#DEFAULT}. */
    public QpInfo info() {
        return info(ConnectOptions.DEFAULT);
    }

    /** RESET → INIT, allowing the peer {@code options.access()}. */
    public void init(ConnectOptions options) {
        int remoteRights = Access.mask(options.access()) & Access.mask(Access.REMOTE);
        modify(new QpTransition(QpState.INIT, options.port(), remoteRights, null, null, 0, null, 0, 0, 0, 0, 0, 0, 0));
    }

    /** INIT → RTR: ready to receive from {@code remote}. */
    public void readyToReceive(QpInfo remote, ConnectOptions options) {
        PortAttributes port = pd.context().port(options.port());
        Mtu path = remote.mtu().bytes() < port.activeMtu().bytes() ? remote.mtu() : port.activeMtu();
        Gid source = pd.context().gid(options.port(), options.gidIndex());
        int gidIndex = options.gidIndex() >= 0 ? options.gidIndex() : port.gids().indexOf(source);
        modify(new QpTransition(QpState.RTR, options.port(), 0, remote, source, Math.max(gidIndex, 0), path,
                options.minRnrTimer(), options.maxDestRdAtomic(), 0, 0, 0, 0, 0));
    }

    /** RTR → RTS: ready to send. */
    public void readyToSend(ConnectOptions options) {
        modify(new QpTransition(QpState.RTS, options.port(), 0, null, null, 0, null, 0, 0, psn, options.timeout(),
                options.retryCount(), options.rnrRetry(), options.maxRdAtomic()));
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
        modify(QpTransition.to(QpState.ERROR));
    }

    /** Any state → RESET: outstanding requests are discarded without completions (their futures fail). */
    public void reset() {
        modify(QpTransition.to(QpState.RESET));
        String reason = "qpn " + number() + " was reset before this request completed";
        queues.send().discardAll(reason, false);
        queues.receive().discardAll(reason, false);
    }

    /** RTS → SQD: the send queue stops taking new requests from the queue once in-flight ones finish. */
    public void drainSendQueue() {
        modify(QpTransition.to(QpState.SQD));
    }

    private void modify(QpTransition t) {
        resource.checkOpen();
        synchronized (modifyLock) {
            QpState now = ops.state();
            if (!now.canMoveTo(t.target())) {
                throw new QpStateException("ibv_modify_qp", toString(), now, "moving to " + t.target());
            }
            ops.modify(t);
        }
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
        var future = new CompletableFuture<WorkCompletion>();
        postSend(request, future);
        return future;
    }

    /** Posts a receive request; its completion goes to whoever polls the receive CQ. */
    public void post(ReceiveRequest request) {
        postReceive(request, null);
    }

    /** Posts a receive request and returns a future for its completion. */
    public CompletableFuture<WorkCompletion> postAsync(ReceiveRequest request) {
        var future = new CompletableFuture<WorkCompletion>();
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
        if (wr.isInline() && sgl.totalLength() > capabilities.maxInlineData()) {
            throw new IllegalArgumentException(sgl.totalLength() + " inline bytes exceed maxInlineData "
                    + capabilities.maxInlineData() + " of " + this);
        }
        InFlight send = queues.send();
        send.lock.lock();
        try {
            if (wr.opcode() == Opcode.BIND_MW) {
                postBind(wr, future, send);
                return;
            }
            InFlight.Outcome outcome = wr.opcode() == Opcode.LOCAL_INV ? invalidation(wr.invalidateRkey()) : null;
            long id = send.claim("ibv_post_send", toString(), wr.wrId(), wr.opcode().completion(), sgl, null,
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
        int[] key = {window.nextRkey()};
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
            id = send.claim("ibv_post_send", toString(), wr.wrId(), WcOpcode.BIND_MW, wr.sgl(), region, future, outcome);
        } catch (RuntimeException e) {
            region.resource().removePin();
            window.resource().removePin();
            throw e;
        }
        try {
            key[0] = ops.bindWindow(window.ops(), region.ops(), region.address() + wr.bindOffset(), wr.bindLength(),
                    wr.bindAccess(), key[0], id, wr.isSignaled());
        } catch (RuntimeException e) {
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
        if (rr.sgl().count() > capabilities.maxRecvSge()) {
            throw new IllegalArgumentException(rr.sgl().count() + " scatter/gather entries exceed maxRecvSge "
                    + capabilities.maxRecvSge() + " of " + this);
        }
        InFlight receive = queues.receive();
        receive.lock.lock();
        try {
            long id = receive.claim("ibv_post_recv", toString(), rr.wrId(), WcOpcode.RECV, rr.sgl(), null, future, null);
            try {
                ops.postRecv(rr, id);
            } catch (RuntimeException e) {
                receive.unclaim();
                throw e;
            }
        } finally {
            receive.lock.unlock();
        }
    }

    /** Outstanding (posted, not yet completed) requests on the send queue. */
    public int outstandingSends() {
        return queues.send().outstanding();
    }

    /** Outstanding requests on the receive queue. */
    public int outstandingReceives() {
        return queues.receive().outstanding();
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
