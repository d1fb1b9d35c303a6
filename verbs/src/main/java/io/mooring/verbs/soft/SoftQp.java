package io.mooring.verbs.soft;

import io.mooring.verbs.QpInfo;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.spi.MrOps;
import io.mooring.verbs.spi.MwOps;
import io.mooring.verbs.spi.QpOps;
import io.mooring.verbs.testing.FaultOps;
import io.mooring.verbs.testing.FaultPlan;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.QpAttribute;
import io.mooring.verbs.values.QpAttributes;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.QpState;
import io.mooring.verbs.values.RecvWr;
import io.mooring.verbs.values.SendWr;
import io.mooring.verbs.values.WcOpcode;
import java.util.SplittableRandom;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A reliable-connected QP of the soft NIC: its state, its work queues and the parts that act on them — the
 * {@link Requester} executes the send queue, the {@link Responder} executes what the peer sends, the
 * {@link QpLink} is the connection between them. Its lock guards state changes and the queues, as a NIC's engine and
 * doorbell share a work queue; the public layer has checked every transition and post before it gets here.
 *
 * <p>As on hardware: a failed request completes with its error status and moves the QP to ERROR, after which every
 * queued request completes with WR_FLUSH_ERR (receives at once, sends in order by the requester).
 */
final class SoftQp implements QpOps {
    final SoftDevice device;
    final SoftPd pd;
    final SoftCq sendCq;
    final SoftCq recvCq;
    private final int qpn;
    private final QpCapabilities capabilities;
    final ReentrantLock lock = new ReentrantLock();
    final WorkRing<SendWork> sendQueue;                  // guarded by lock
    final ReceiveRing recvQueue;                         // guarded by lock; empty with an srq
    private final RecvWork flushed = new RecvWork();     // guarded by lock: the receive being flushed
    final SoftSrq srq;                                   // null: receives come from recvQueue
    volatile int changes; // bumped under lock by every post and state change: an idle requester waits for a bump
    final QpLink link = new QpLink(this);
    final Responder responder = new Responder(this);
    private final Requester requester;
    volatile QpState state = QpState.RESET;
    volatile boolean destroyed;
    // Connection attributes, written by modify under lock before the state that uses them is published.
    volatile int access;
    private volatile QpInfo remote;
    private QpAttributes attributes = QpAttributes.builder().build(); // guarded by lock: what modify set, for query
    volatile int minRnrTimer;
    volatile int timeout;
    volatile int retryCount;
    volatile int rnrRetry;
    volatile int readDepth = 1; // max_rd_atomic: the READs and atomics the requester has in flight at most
    volatile int destReadDepth = 1; // max_dest_rd_atomic: the atomics whose results the responder keeps for replay
    volatile int sendPsn;  // written by the requester: the PSN of the next new request
    volatile int resets;   // written under lock: a request taken before a reset is never sent after it
    volatile FaultInjector faults; // written under lock; null: none injected

    SoftQp(SoftDevice device, SoftPd pd, SoftCq sendCq, SoftCq recvCq, QpCapabilities capabilities, SoftSrq srq) {
        this.device = device;
        this.srq = srq;
        this.pd = pd;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.capabilities = capabilities;
        this.qpn = device.newQpNumber();
        this.sendQueue = new WorkRing<>(capabilities.maxSendWr(), () -> new SendWork(capabilities.maxInlineData()));
        this.recvQueue = new ReceiveRing(srq == null ? capabilities.maxRecvWr() : 1, pd);
        this.requester = new Requester(this, capabilities.maxInlineData());
        sendCq.users.incrementAndGet();
        recvCq.users.incrementAndGet();
        if (srq != null) srq.users.incrementAndGet();
        device.register(this); // its requester's thread starts with the first post or state change
    }

    @Override
    public int qpNumber() {
        return qpn;
    }

    @Override
    public QpState state() {
        return state;
    }

    @Override
    public QpCapabilities capabilities() {
        return capabilities;
    }

    @Override
    public long token() {
        return link.token();
    }

    String name() {
        return "qpn " + qpn + " on " + device.name;
    }

    QpInfo remote() {
        return remote;
    }

    boolean isDestroyed() {
        return destroyed;
    }

    // ---- the state machine -------------------------------------------------------------------------------------

    @Override
    public void modify(QpAttributes a) {
        boolean overTcp = false;
        QpState target = a.state();
        lock.lock();
        try {
            if (a.isSet(QpAttribute.ACCESS_FLAGS)) access = Access.mask(a.access());
            if (a.isSet(QpAttribute.MIN_RNR_TIMER)) minRnrTimer = a.minRnrTimerCode();
            if (a.isSet(QpAttribute.RQ_PSN)) responder.expect(a.receivePsn());
            if (a.isSet(QpAttribute.SQ_PSN)) sendPsn = a.sendPsn();
            if (a.isSet(QpAttribute.TIMEOUT)) timeout = a.ackTimeoutCode();
            if (a.isSet(QpAttribute.RETRY_COUNT)) retryCount = a.retryCount();
            if (a.isSet(QpAttribute.RNR_RETRY)) rnrRetry = a.rnrRetry();
            if (a.isSet(QpAttribute.MAX_RD_ATOMIC)) readDepth = Math.max(1, a.maxRdAtomic());
            if (a.isSet(QpAttribute.MAX_DEST_RD_ATOMIC)) destReadDepth = Math.max(1, a.maxDestRdAtomic());
            attributes = attributes.toBuilder().apply(a).build();
            switch (target) {
                case RTR -> {
                    remote = new QpInfo(a.destQpNumber(), a.receivePsn(), a.destGid(), a.destLid(), a.pathMtu(),
                            a.destToken());
                    overTcp = !device.isSelf(remote.gid(), remote.lid());
                    link.expect(overTcp);
                }
                case ERROR -> enterErrorLocked();
                case RESET -> {
                    resets++;
                    sendQueue.clear();
                    recvQueue.clear();
                    remote = null;
                    attributes = QpAttributes.builder().build();
                    link.drop();
                }
                default -> { }
            }
            state = target;
            changed();
        } finally {
            lock.unlock();
        }
        if (overTcp) device.fabric.connect(this, remote);
    }

    /** {@code ibv_query_qp}: what was set since the last reset, with the state and PSNs as they are now. */
    @Override
    public QpAttributes query() {
        lock.lock();
        try {
            return attributes.toBuilder().state(state).sendPsn(sendPsn).receivePsn(responder.expectedPsn()).build();
        } finally {
            lock.unlock();
        }
    }

    /** ERROR: receives flush now; the requester flushes the send queue in order. Caller holds the lock. */
    private void enterErrorLocked() {
        state = QpState.ERROR;
        while (recvQueue.take(flushed)) {
            recvCq.push(flushed.wrId, WcStatus.WR_FLUSH_ERR.code(), WcOpcode.RECV.code(), 0, 0, 0, qpn);
        }
        changed();
    }

    /** A completion of this QP's was lost to an overrun CQ ({@link SoftCq#push}): the QP moves to ERROR. */
    void completionLost() {
        if (state != QpState.ERROR) enterError();
    }

    /** The responder found an error: the QP moves to ERROR (rxe moves the responder's QP too). */
    void enterError() {
        fail(null, 0, 0, null);
    }

    /**
     * Moves to ERROR and reports the request that caused it, in that order (a poller that sees the error
     * completion finds the QP in ERROR), before the flushes of the requests queued behind it.
     */
    void fail(SoftCq cq, long wrId, int opcode, WcStatus status) {
        lock.lock();
        try {
            if (state == QpState.RESET || destroyed) return;
            state = QpState.ERROR;
            if (cq != null) cq.push(wrId, status.code(), opcode, 0, 0, 0, qpn);
            enterErrorLocked();
        } finally {
            lock.unlock();
        }
    }

    // ---- posting -----------------------------------------------------------------------------------------------

    // The public layer calls these holding the queue's lock, after checking the state: lock guards the ring against
    // the requester (and a modify), as a NIC's doorbell hands a work queue entry to its engine.

    @Override
    public void postSend(SendWr wr, long wrId) {
        lock.lock();
        try {
            sendQueue.add().set(wr, wrId);
            changes++;
        } finally {
            lock.unlock();
        }
        requester.wake(); // after the unlock: woken into a held lock, it would queue for it (a node per wait)
    }

    @Override
    public int bindWindow(MwOps window, MrOps region, long address, long length, int access, int newRkey, long wrId,
                          boolean signaled) {
        lock.lock();
        try {
            sendQueue.add().setBind(wrId, signaled, (SoftMw) window, (SoftMr) region, address, length, access, newRkey);
            changes++;
        } finally {
            lock.unlock();
        }
        requester.wake();
        return newRkey;
    }

    /**
     * The state changed or the queues were emptied (caller holds the lock): wake the requester, spinning or parked.
     * Posts bump {@link #changes} the same way but wake it after releasing the lock.
     */
    private void changed() {
        changes++; // single writer: the lock's holder
        requester.wake();
    }

    @Override
    public void postRecv(RecvWr rr, long wrId) {
        lock.lock();
        try {
            if (state == QpState.ERROR) {
                recvCq.push(wrId, WcStatus.WR_FLUSH_ERR.code(), WcOpcode.RECV.code(), 0, 0, 0, qpn);
            } else {
                recvQueue.add(wrId, rr.sgl());
            }
        } finally {
            lock.unlock();
        }
    }

    // ---- the connection, for the fabric -----------------------------------------------------------------------

    /** Executes one request of the peer's (see {@link Responder#respond}). */
    Wire.Response respond(Wire.Request r, Link via) {
        return responder.respond(r, via);
    }

    boolean admits(TcpLink.Hello dial) {
        return link.admits(dial);
    }

    boolean isStale(TcpLink.Hello dial) {
        return link.isStale(dial);
    }

    int nextDial() {
        return link.nextDial();
    }

    boolean attach(Link l, TcpLink.Hello dial) {
        return link.attach(l, dial);
    }

    void detach(Link l) {
        link.detach(l);
    }

    boolean carries(Link l) {
        return link.carries(l);
    }

    void closeLink() {
        link.closeLink();
    }

    // ---- fault injection ---------------------------------------------------------------------------------------

    @Override
    public FaultOps injectFaults(FaultPlan plan) {
        var injector = new FaultInjector(plan, this, new SplittableRandom(plan.seed()));
        adopt(injector);
        return injector;
    }

    /** From now on {@code injector} decides the faults of this QP's traffic; a QP has at most one. */
    void adopt(FaultInjector injector) {
        lock.lock();
        try {
            if (faults != null) {
                throw new IllegalStateException(name() + " has faults injected already (" + faults.plan()
                        + "); close that FaultInjection first");
            }
            faults = injector;
        } finally {
            lock.unlock();
        }
    }

    void dropFaults(FaultInjector injector) {
        lock.lock();
        try {
            if (faults == injector) faults = null;
        } finally {
            lock.unlock();
        }
    }

    boolean belongsTo(SoftContext context) {
        return pd.context == context;
    }

    @Override
    public void destroy() {
        lock.lock();
        try {
            destroyed = true;
            state = QpState.RESET;
            sendQueue.clear();
            recvQueue.clear();
            changed();
        } finally {
            lock.unlock();
        }
        requester.stop();
        responder.awaitIdle(); // an incoming request in progress finishes before the memory is let go
        link.drop();
        device.unregister(this);
        sendCq.users.decrementAndGet();
        recvCq.users.decrementAndGet();
        if (srq != null) srq.users.decrementAndGet();
        pd.children.decrementAndGet();
    }
}
