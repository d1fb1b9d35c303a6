package io.mooring.verbs.soft;

import io.mooring.verbs.Access;
import io.mooring.verbs.FaultPlan;
import io.mooring.verbs.MwType;
import io.mooring.verbs.Opcode;
import io.mooring.verbs.QpAttribute;
import io.mooring.verbs.QpAttributes;
import io.mooring.verbs.QpCapabilities;
import io.mooring.verbs.QpInfo;
import io.mooring.verbs.QpState;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.WcFlag;
import io.mooring.verbs.WcOpcode;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.spi.FaultOps;
import io.mooring.verbs.spi.MrOps;
import io.mooring.verbs.spi.MwOps;
import io.mooring.verbs.spi.QpOps;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.security.SecureRandom;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * A reliable-connected QP of the soft NIC: a requester that executes its send queue in order on its own
 * thread, and a responder that executes what its peer's requester sends (on the peer's thread in one device,
 * on the TCP reader thread across devices).
 *
 * <p>As on hardware: a failed request completes with its error status (signaled or not) and moves the QP to
 * ERROR, after which every queued request completes with WR_FLUSH_ERR; an access the responder rejects moves
 * both QPs to ERROR and never touches memory; a SEND that finds no receive is retried per {@code rnr_retry};
 * a responder that does not answer (not connected, gone) is retried per {@code retry_cnt}. Retrying stops as soon
 * as the QP moves to ERROR (the request flushes) or is reset (it is discarded).
 */
final class SoftQp implements QpOps {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    /** The bind rights that need a locally writable region ({@link Access#needsLocalWrite()}). */
    private static final int NEEDS_LOCAL_WRITE = Access.REMOTE_WRITE.bit() | Access.REMOTE_ATOMIC.bit();
    /** IBTA's RNR NAK timer table in microseconds, index = the 5-bit code (0 means 655.36 ms). */
    private static final int[] RNR_DELAY_MICROS = {655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640,
        960, 1280, 1920, 2560, 3840, 5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880,
        163_840, 245_760, 327_680, 491_520};

    /** How long a requester waits for the TCP connection to its peer to come up before counting retries. */
    private static final long LINK_WAIT_NANOS = TimeUnit.SECONDS.toNanos(2);
    /** Draws the tokens a peer's dial must present: anyone on the host can connect to the fabric's port. */
    private static final SecureRandom TOKENS = new SecureRandom();

    /** How long an idle requester spins for the next post before it sleeps: waking a sleeping one allocates. */
    private static final long SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(20);
    /** The requester's first payload buffer; it grows to the largest message sent. */
    private static final int PAYLOAD_BUFFER = 4096;

    private final SoftDevice device;
    private final SoftPd pd;
    private final SoftCq sendCq;
    private final SoftCq recvCq;
    private final int qpn;
    private final QpCapabilities capabilities;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition workToDo = lock.newCondition();
    private final WorkRing<SendWork> sendQueue;                         // guarded by lock
    private final WorkRing<RecvWork> recvQueue;                         // guarded by lock; empty with an srq
    private final RecvWork flushed = new RecvWork();                   // guarded by lock: the receive being flushed
    private final SoftSrq srq; // null: receives come from recvQueue
    private volatile int postedSends;  // bumped by every post: an idle requester spins on it before it sleeps
    // The requester's own: the request in hand, its packet and its payload (no allocation per request).
    private final SendWork current;
    private final Wire.Request request = new Wire.Request();
    private byte[] payload = new byte[PAYLOAD_BUFFER];
    private final RecvWork received = new RecvWork(); // guarded by responding: the receive being filled
    private final ReentrantLock responding = new ReentrantLock();      // one incoming request at a time
    private final Thread requester;
    private volatile QpState state = QpState.RESET;
    private volatile boolean destroyed;
    private volatile Link link;
    private final Object linkChanged = new Object();
    private int connection;            // guarded by linkChanged: bumped by every reset and every dial of ours
    private TcpLink.Hello newestDial;  // guarded by linkChanged: of the last connection attached; survives resets
    private volatile long token = TOKENS.nextLong(); // written under linkChanged: what the peer's dial presents
    private volatile long previousToken; // the token before the last reset: a late dial of the old peer presents it
    // Connection attributes, written by modify under lock before the state that uses them is published.
    private volatile int access;
    private volatile QpInfo remote;
    private QpAttributes attributes = new QpAttributes(); // guarded by lock: what modify set, for query
    private volatile int minRnrTimer;
    private volatile int timeout;
    private volatile int retryCount;
    private volatile int rnrRetry;
    private volatile int sendPsn;  // written by the requester: the PSN of the next new request
    private volatile int resets;   // written under lock: a request taken before a reset is never sent after it
    private int takenAt;           // requester only: resets when the request in hand was taken
    private volatile int expectedPsn; // written under responding: the PSN of the next new incoming request
    private int lastAtomicPsn = -1; // guarded by responding: a duplicated atomic is answered, not executed again
    private long lastAtomicOriginal;
    private volatile boolean linkExpected; // a TCP connection to the peer is being set up
    private volatile FaultInjector faults; // written under lock; null: none injected

    SoftQp(SoftDevice device, SoftPd pd, SoftCq sendCq, SoftCq recvCq, QpCapabilities capabilities, SoftSrq srq) {
        this.device = device;
        this.srq = srq;
        this.pd = pd;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
        this.capabilities = capabilities;
        this.qpn = device.newQpNumber();
        this.sendQueue = new WorkRing<>(capabilities.maxSendWr(), () -> new SendWork(capabilities.maxInlineData()));
        this.recvQueue = new WorkRing<>(srq == null ? capabilities.maxRecvWr() : 1, RecvWork::new);
        this.current = new SendWork(capabilities.maxInlineData());
        sendCq.users.incrementAndGet();
        recvCq.users.incrementAndGet();
        if (srq != null) srq.users.incrementAndGet();
        device.register(this);
        this.requester = Thread.ofVirtual().name("soft-qp-" + qpn).start(this::runRequester);
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
        return token;
    }

    /**
     * Whether {@code dial}, a dial of the peer's, knows this QP's token, which only the peer's {@code QpInfo}
     * carried: a third process on the host could otherwise replace the connection and act as the peer.
     */
    boolean admits(TcpLink.Hello dial) {
        return dial.token() == token;
    }

    /**
     * Whether a refused {@code dial} is only late: a dial the previous peer started before this QP was reset, which
     * presents the token of that connection. Refused all the same, but not worth a warning.
     */
    boolean isStale(TcpLink.Hello dial) {
        return dial.token() == previousToken;
    }

    private String name() {
        return "qpn " + qpn + " on " + device.name;
    }

    // ---- control ---------------------------------------------------------------------------------------------

    @Override
    public void modify(QpAttributes a) {
        boolean overTcp = false;
        QpState target = a.state();
        lock.lock();
        try {
            if (a.isSet(QpAttribute.ACCESS_FLAGS)) access = Access.mask(a.access());
            if (a.isSet(QpAttribute.MIN_RNR_TIMER)) minRnrTimer = a.minRnrTimer();
            if (a.isSet(QpAttribute.RQ_PSN)) setExpectedPsn(a.receivePsn());
            if (a.isSet(QpAttribute.SQ_PSN)) sendPsn = a.sendPsn();
            if (a.isSet(QpAttribute.TIMEOUT)) timeout = a.timeout();
            if (a.isSet(QpAttribute.RETRY_COUNT)) retryCount = a.retryCount();
            if (a.isSet(QpAttribute.RNR_RETRY)) rnrRetry = a.rnrRetry();
            attributes.apply(a);
            switch (target) {
                case RTR -> {
                    remote = new QpInfo(a.destQpNumber(), a.receivePsn(), a.destGid(), a.destLid(), a.pathMtu(),
                            a.destToken());
                    overTcp = !device.isSelf(remote.gid(), remote.lid());
                    linkExpected = overTcp;
                }
                case ERROR -> enterErrorLocked();
                case RESET -> {
                    resets++;
                    sendQueue.clear();
                    recvQueue.clear();
                    remote = null;
                    attributes = new QpAttributes();
                    dropLink();
                }
                default -> { }
            }
            state = target;
            workToDo.signalAll();
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
            return attributes.copy().state(state).sendPsn(sendPsn).receivePsn(expectedPsn);
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
        workToDo.signalAll();
    }

    private void enterError() {
        fail(null, 0, 0, null);
    }

    /**
     * Moves to ERROR and reports the request that caused it, in that order (a poller that sees the error
     * completion finds the QP in ERROR), before the flushes of the requests queued behind it.
     */
    private void fail(SoftCq cq, long wrId, int opcode, WcStatus status) {
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

    private void setExpectedPsn(int psn) {
        responding.lock();
        try {
            expectedPsn = psn;
            lastAtomicPsn = -1;
        } finally {
            responding.unlock();
        }
    }

    QpInfo remote() {
        return remote;
    }

    boolean isDestroyed() {
        return destroyed;
    }

    /** Numbers a dial of ours, made at RTR (see {@link #attach}). */
    int nextDial() {
        synchronized (linkChanged) {
            return ++connection;
        }
    }

    /**
     * A TCP connection to the peer is up (dialed by us or accepted from it); false if it is refused as superseded.
     * A dial can finish after a reset and reconnect started the next one. One of ours is refused unless it is our
     * latest and no reset came since, so we never keep a connection past the connect it was made for; one of the
     * peer's is refused if a later dial of the peer's got here first. Otherwise the two ends could keep different
     * connections whose other halves get closed, or replace one under a request the peer executed and lose its
     * answer: requests would end in RETRY_EXC_ERR.
     */
    boolean attach(Link l, TcpLink.Hello dial) {
        Link old;
        synchronized (linkChanged) {
            boolean ours = dial.sourceQpn() == qpn && dial.sourceLid() == device.lid()
                    && dial.sourceGid().equals(device.gid());
            if (!ours && !admits(dial)) return false; // admitted before a reset changed the token
            if (ours ? dial.dial() != connection
                    : newestDial != null && newestDial.sameDialer(dial) && dial.dial() <= newestDial.dial()) {
                return false;
            }
            newestDial = dial;
            old = link;
            link = l;
            linkChanged.notifyAll();
        }
        if (old != null && old != l) old.close();
        return true;
    }

    /** The TCP connection went down. Under the lock: a connection attached meanwhile must not be forgotten. */
    void detach(Link l) {
        synchronized (linkChanged) {
            if (link == l) link = null;
        }
    }

    private void dropLink() {
        Link l;
        synchronized (linkChanged) {
            connection++; // a dial of ours still under way was for the connection dropped here
            previousToken = token;
            token = TOKENS.nextLong(); // and the peer of the next connection gets a new one
            l = link;
            link = null;
        }
        if (l != null) l.close();
    }

    // ---- fault injection -------------------------------------------------------------------------------------

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

    /** Whether {@code l} is the connection this QP uses now (not one a reset or a newer dial replaced). */
    boolean carries(Link l) {
        return link == l;
    }

    /** Closes the connection to the peer, as the death of the peer's process does. */
    void closeLink() {
        Link l = link;
        if (l != null) l.close();
    }

    @Override
    public void destroy() {
        lock.lock();
        try {
            destroyed = true;
            state = QpState.RESET;
            sendQueue.clear();
            recvQueue.clear();
            workToDo.signalAll();
        } finally {
            lock.unlock();
        }
        requester.interrupt();
        if (Thread.currentThread() != requester) {
            boolean interrupted = false;
            while (requester.isAlive()) {
                try {
                    requester.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) Thread.currentThread().interrupt();
        }
        responding.lock(); // an incoming request in progress finishes before the memory is let go
        responding.unlock();
        dropLink();
        device.unregister(this);
        sendCq.users.decrementAndGet();
        recvCq.users.decrementAndGet();
        if (srq != null) srq.users.decrementAndGet();
        pd.children.decrementAndGet();
    }

    // ---- posting ---------------------------------------------------------------------------------------------

    // The public layer calls these holding the queue's lock, after checking the state: lock guards the ring against
    // the requester (and a modify), as a NIC's doorbell hands a work queue entry to its engine.

    @Override
    public void postSend(WorkRequest wr, long wrId) {
        lock.lock();
        try {
            sendQueue.add().set(wr, wrId);
            queued();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int bindWindow(MwOps window, MrOps region, long address, long length, int access, int newRkey, long wrId,
                          boolean signaled) {
        lock.lock();
        try {
            sendQueue.add().setBind(wrId, signaled, (SoftMw) window, (SoftMr) region, address, length, access, newRkey);
            queued();
        } finally {
            lock.unlock();
        }
        return newRkey;
    }

    /** A request was queued (caller holds the lock): wake the requester, which may be spinning or asleep. */
    private void queued() {
        postedSends++; // single writer: posts hold the lock
        workToDo.signalAll();
    }

    @Override
    public void postRecv(ReceiveRequest rr, long wrId) {
        lock.lock();
        try {
            if (state == QpState.ERROR) {
                recvCq.push(wrId, WcStatus.WR_FLUSH_ERR.code(), WcOpcode.RECV.code(), 0, 0, 0, qpn);
            } else {
                recvQueue.add().set(wrId, rr.sgl(), pd);
            }
        } finally {
            lock.unlock();
        }
    }

    // ---- requester -------------------------------------------------------------------------------------------

    private void runRequester() {
        try {
            SendWork work = current;
            while (true) {
                boolean flush;
                lock.lock();
                try {
                    while (!destroyed && !hasWork()) {
                        int seen = postedSends;
                        lock.unlock();
                        try {
                            spinFor(seen);
                        } finally {
                            relock();
                        }
                        if (!destroyed && !hasWork()) workToDo.await();
                    }
                    if (destroyed) return;
                    sendQueue.take(work);
                    flush = state == QpState.ERROR;
                    takenAt = resets;
                } finally {
                    lock.unlock();
                }
                if (flush) {
                    complete(work, WcStatus.WR_FLUSH_ERR, 0);
                    continue;
                }
                WcStatus status = execute(work);
                if (status != WcStatus.SUCCESS) failRequest(work, status);
            }
        } catch (InterruptedException e) {
            // destroyed
        }
    }

    /** Whether a request is queued and the QP executes (RTS) or flushes (ERROR) its send queue. Caller holds lock. */
    private boolean hasWork() {
        return !sendQueue.isEmpty() && (state == QpState.RTS || state == QpState.ERROR);
    }

    /**
     * Spins a little for a post after {@code seen} before the requester sleeps: an application posting again right
     * after its completion (a ping-pong, a pipeline) then finds it awake, and waking a sleeping virtual thread
     * allocates its scheduler's task.
     */
    private void spinFor(int seen) {
        long end = System.nanoTime() + SPIN_NANOS;
        while (postedSends == seen && !destroyed && System.nanoTime() - end < 0) Thread.onSpinWait();
    }

    /**
     * Takes the lock back after spinning, spinning on it a while first: a post holds it only briefly, and a requester
     * that queued for it would sleep, and be woken, which allocates.
     */
    private void relock() {
        long end = System.nanoTime() + SPIN_NANOS;
        while (!lock.tryLock()) {
            if (System.nanoTime() - end >= 0) {
                lock.lock();
                return;
            }
            Thread.onSpinWait();
        }
    }

    /**
     * The request in hand failed: it completes with {@code status} and the QP moves to ERROR, unless a reset
     * discarded it meanwhile.
     */
    private void failRequest(SendWork w, WcStatus status) {
        lock.lock();
        try {
            if (resets == takenAt) fail(sendCq, w.wrId, w.opcode.completion().code(), status);
        } finally {
            lock.unlock();
        }
    }

    /** Whether the request in hand must not be sent (again): its QP was destroyed, reset, or moved to ERROR. */
    private boolean requestStopped() {
        return destroyed || state == QpState.ERROR || resets != takenAt;
    }

    private void complete(SendWork w, WcStatus status, int byteLength) {
        if (status == WcStatus.SUCCESS && !w.signaled) return;
        sendCq.push(w.wrId, status.code(), w.opcode.completion().code(), byteLength, 0, 0, qpn);
    }

    /** Runs one request; pushes its success completion itself and returns SUCCESS, or returns the error. */
    private WcStatus execute(SendWork w) throws InterruptedException {
        return switch (w.opcode) {
            case LOCAL_INV -> invalidateLocally(w);
            case BIND_MW -> bind(w);
            case SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM -> sendOrWrite(w);
            case RDMA_READ -> read(w);
            case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD -> atomic(w);
        };
    }

    private WcStatus invalidateLocally(SendWork w) {
        if (!(device.keys.get(w.invalidateRkey >>> 8) instanceof SoftMw mw) || mw.pd != pd || mw.type != MwType.TYPE_2
                || !mw.invalidate(w.invalidateRkey)) {
            return WcStatus.MW_BIND_ERR;
        }
        complete(w, WcStatus.SUCCESS, 0);
        return WcStatus.SUCCESS;
    }

    private WcStatus bind(SendWork w) {
        SoftMw mw = w.window;
        SoftMr mr = w.bindRegion;
        boolean allowed = mw.pd == pd && mr.pd == pd && device.keys.get(mr.key >>> 8) == mr
                && (mr.access & Access.MW_BIND.bit()) != 0 && mr.covers(w.bindAddress, w.bindLength)
                && ((w.bindAccess & NEEDS_LOCAL_WRITE) == 0 || (mr.access & Access.LOCAL_WRITE.bit()) != 0)
                && (mw.type == MwType.TYPE_1 || (!mw.isBound() && (w.newRkey >>> 8) == mw.index()));
        if (!allowed) return WcStatus.MW_BIND_ERR;
        mw.bind(w.newRkey, mr, w.bindAddress, w.bindLength, w.bindAccess, this);
        complete(w, WcStatus.SUCCESS, 0);
        return WcStatus.SUCCESS;
    }

    private WcStatus sendOrWrite(SendWork w) throws InterruptedException {
        byte[] data = w.inline;
        int length = w.inlineLength;
        if (length < 0) {
            length = gather(w.sges);
            if (length < 0) return WcStatus.LOC_PROT_ERR;
            data = payload;
        }
        var response = transmit(request.set(w.opcode.code(), qpn, sendPsn, w.remoteAddress, w.rkey, length, data,
                w.immediate, 0, 0));
        WcStatus status = statusOf(response);
        if (status == WcStatus.SUCCESS) complete(w, status, length);
        return status;
    }

    private WcStatus read(SendWork w) throws InterruptedException {
        long total = w.sges.totalLength();
        if (total > Integer.MAX_VALUE) return WcStatus.LOC_LEN_ERR;
        if (!locallyWritable(w.sges)) return WcStatus.LOC_PROT_ERR;
        var response = transmit(request.set(w.opcode.code(), qpn, sendPsn, w.remoteAddress, w.rkey, (int) total,
                null, 0, 0, 0));
        WcStatus status = statusOf(response);
        if (status != WcStatus.SUCCESS) return status;
        if (!scatter(w.sges, response.data(), response.data().length, pd)) return WcStatus.LOC_PROT_ERR;
        complete(w, status, (int) total);
        return status;
    }

    private WcStatus atomic(SendWork w) throws InterruptedException {
        if (w.sges.count != 1 || w.sges.length[0] != Long.BYTES) return WcStatus.LOC_LEN_ERR;
        if (!locallyWritable(w.sges)) return WcStatus.LOC_PROT_ERR;
        var response = transmit(request.set(w.opcode.code(), qpn, sendPsn, w.remoteAddress, w.rkey, Long.BYTES,
                null, 0, w.compareAdd, w.swap));
        WcStatus status = statusOf(response);
        if (status != WcStatus.SUCCESS) return status;
        byte[] original = MemorySegment.ofArray(new long[] {response.atomicOriginal()}).toArray(ValueLayout.JAVA_BYTE);
        if (!scatter(w.sges, original, original.length, pd)) return WcStatus.LOC_PROT_ERR;
        complete(w, status, Long.BYTES);
        return status;
    }

    private static WcStatus statusOf(Wire.Response r) {
        if (r == null) return WcStatus.WR_FLUSH_ERR; // its QP stopped while it was retried
        return switch (r.kind()) {
            case ACK -> WcStatus.SUCCESS;
            case NAK_ACCESS -> WcStatus.REM_ACCESS_ERR;
            case NAK_INVALID_REQUEST -> WcStatus.REM_INV_REQ_ERR;
            case NAK_OPERATION -> WcStatus.REM_OP_ERR;
            case RNR -> WcStatus.RNR_RETRY_EXC_ERR;
            case DROPPED -> WcStatus.RETRY_EXC_ERR;
        };
    }

    /**
     * Delivers a request with the RC retry rules: no answer is retried {@code retry_cnt} times after the ACK
     * timeout; an RNR NAK is retried {@code rnr_retry} times (7: forever) after the responder's RNR timer.
     * Returns the last answer, which is RNR or DROPPED when retries ran out, or null as soon as the QP stops
     * (ERROR, reset, destroyed): a requester retrying forever (rnr_retry 7) must still flush.
     */
    private Wire.Response transmit(Wire.Request request) throws InterruptedException {
        long ackTimeoutNanos = Math.min(TimeUnit.SECONDS.toNanos(8), Math.max(TimeUnit.MILLISECONDS.toNanos(1),
                4096L << timeout));
        int retries = retryCount;
        int rnrRetries = rnrRetry;
        while (true) {
            if (requestStopped()) return null;
            Link l = currentLink();
            FaultInjector f = faults;
            Wire.Response r = f != null ? f.exchange(l, request, ackTimeoutNanos)
                    : l == null ? Wire.Response.DROPPED : l.exchange(request, ackTimeoutNanos);
            boolean connecting = l == null && (f == null || !f.isCut());
            if (r.kind() == Wire.Kind.DROPPED && connecting && awaitLink()) continue; // not a retry
            switch (r.kind()) {
                case DROPPED -> {
                    if (retries-- == 0) return r;
                    awaitRetry(ackTimeoutNanos);
                }
                case RNR -> {
                    if (rnrRetries != 7 && rnrRetries-- == 0) return r;
                    awaitRetry(TimeUnit.MICROSECONDS.toNanos(RNR_DELAY_MICROS[r.rnrTimer() & 31]));
                }
                default -> {
                    if (r.kind() == Wire.Kind.ACK) sendPsn = Wire.nextPsn(sendPsn);
                    return r;
                }
            }
        }
    }

    /** Waits {@code nanos} before a retry, or less if the QP stops meanwhile (every modify signals). */
    private void awaitRetry(long nanos) throws InterruptedException {
        lock.lock();
        try {
            for (long left = nanos; left > 0 && !requestStopped(); ) left = workToDo.awaitNanos(left);
        } finally {
            lock.unlock();
        }
    }

    /** Waits (once per connection attempt) for a TCP connection being dialed; true if one came up. */
    private boolean awaitLink() throws InterruptedException {
        long deadline = System.nanoTime() + LINK_WAIT_NANOS;
        synchronized (linkChanged) {
            while (link == null && !destroyed && linkExpected) {
                long left = deadline - System.nanoTime();
                if (left <= 0) break;
                TimeUnit.NANOSECONDS.timedWait(linkChanged, left);
            }
            linkExpected = false; // if it did not come now, the peer is unreachable: retries count from here
            return link != null;
        }
    }

    private Link currentLink() {
        Link l = link;
        if (l != null) return l;
        QpInfo peer = remote;
        if (peer == null || !device.isSelf(peer.gid(), peer.lid())) return null; // TCP: not connected yet
        l = new InJvmLink(device, peer.qpn());
        link = l;
        return l;
    }

    // ---- responder -------------------------------------------------------------------------------------------

    /**
     * Executes one request of the peer's requester against this QP's memory and receive queue. {@code via} is the
     * TCP connection it came on (null within one device): only the one this QP uses now may run requests. One that
     * a reset closed or a newer one replaced can still hand its reader a request arriving as it closes; run, it
     * would act on this QP (an access error moves it to ERROR) while its answer goes nowhere.
     */
    Wire.Response respond(Wire.Request r, Link via) {
        responding.lock();
        try {
            QpState s = state;
            QpInfo peer = remote;
            if (destroyed || s == QpState.RESET || s == QpState.INIT || s == QpState.ERROR
                    || peer == null || peer.qpn() != r.srcQpn() || (via != null && via != link)) {
                return Wire.Response.DROPPED; // not connected to that peer: as if the packet never arrived
            }
            FaultInjector f = faults;
            if (f != null && f.severs()) return Wire.Response.DROPPED;
            Opcode op = Opcode.of(r.opcode());
            int distance = Wire.psnDistance(r.psn(), expectedPsn);
            if (distance > 0) return Wire.Response.DROPPED; // a gap: the requester retransmits in order
            if (distance < 0) return duplicate(r, op);
            Wire.Response answer = switch (op) {
                case SEND, SEND_WITH_IMM -> receive(r, op);
                case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> write(r, op);
                case RDMA_READ -> remoteRead(r);
                case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD -> remoteAtomic(r, op);
                default -> {
                    enterError();
                    yield Wire.Response.INVALID_REQUEST;
                }
            };
            if (answer.kind() == Wire.Kind.ACK) {
                if (op.isAtomic()) {
                    lastAtomicPsn = r.psn();
                    lastAtomicOriginal = answer.atomicOriginal();
                }
                expectedPsn = Wire.nextPsn(expectedPsn);
            }
            return answer;
        } finally {
            responding.unlock();
        }
    }

    /**
     * A retransmission of a request already executed (its answer was lost or late): a READ is served again,
     * the last atomic's original value is replayed, anything else is acknowledged — never executed twice.
     */
    private Wire.Response duplicate(Wire.Request r, Opcode op) {
        if (op == Opcode.RDMA_READ) return remoteRead(r);
        if (op.isAtomic()) {
            return r.psn() == lastAtomicPsn ? Wire.Response.atomic(lastAtomicOriginal) : Wire.Response.DROPPED;
        }
        return Wire.Response.ACK;
    }

    /**
     * Moves the next receive — of the shared receive queue, if the QP has one — into {@link #received}; null if
     * none is posted (or injected faults stall the receives). Caller holds {@link #responding}.
     */
    private RecvWork takeReceive() {
        FaultInjector f = faults;
        if (f != null && f.stallsReceive()) return null;
        if (srq != null) return srq.take(received) ? received : null;
        lock.lock();
        try {
            return recvQueue.take(received) ? received : null;
        } finally {
            lock.unlock();
        }
    }

    /** Puts back a receive that a failed request took, so that entering ERROR flushes it in order. */
    private void returnReceive(RecvWork rw) {
        if (srq != null) {
            srq.putBack(rw);
            return;
        }
        lock.lock();
        try {
            recvQueue.putBack(rw);
        } finally {
            lock.unlock();
        }
    }

    private Wire.Response receive(Wire.Request r, Opcode op) {
        RecvWork rw = takeReceive();
        if (rw == null) return Wire.Response.rnr(minRnrTimer);
        if (r.length() > rw.capacity()) {
            fail(recvCq, rw.wrId, WcOpcode.RECV.code(), WcStatus.LOC_LEN_ERR);
            return Wire.Response.INVALID_REQUEST;
        }
        if (!scatter(rw.sges, r.payload(), r.length(), rw.pd)) {
            fail(recvCq, rw.wrId, WcOpcode.RECV.code(), WcStatus.LOC_PROT_ERR);
            return Wire.Response.OPERATION_ERROR;
        }
        boolean imm = op == Opcode.SEND_WITH_IMM;
        recvCq.push(rw.wrId, WcStatus.SUCCESS.code(), WcOpcode.RECV.code(), r.length(), imm ? r.immediate() : 0,
                imm ? WcFlag.WITH_IMM.bit() : 0, qpn);
        return Wire.Response.ACK;
    }

    private Wire.Response write(Wire.Request r, Opcode op) {
        RecvWork rw = null;
        if (op == Opcode.RDMA_WRITE_WITH_IMM && (rw = takeReceive()) == null) return Wire.Response.rnr(minRnrTimer);
        boolean done = remoteWrite(r);
        if (!done) {
            if (rw != null) returnReceive(rw);
            return accessError();
        }
        if (rw != null) {
            recvCq.push(rw.wrId, WcStatus.SUCCESS.code(), WcOpcode.RECV_RDMA_WITH_IMM.code(), r.length(), r.immediate(),
                    WcFlag.WITH_IMM.bit(), qpn);
        }
        return Wire.Response.ACK;
    }

    private Wire.Response remoteRead(Wire.Request r) {
        byte[] data = new byte[r.length()];
        boolean done = remoteAccess(r.rkey(), r.remoteAddress(), r.length(), Access.REMOTE_READ.bit(),
                src -> MemorySegment.copy(src, ValueLayout.JAVA_BYTE, 0, data, 0, data.length));
        return done ? Wire.Response.data(data) : accessError();
    }

    private Wire.Response remoteAtomic(Wire.Request r, Opcode op) {
        if ((r.remoteAddress() & 7) != 0) { // atomics need natural alignment: an invalid request, not an access error
            enterError();
            return Wire.Response.INVALID_REQUEST;
        }
        long[] original = new long[1];
        boolean done = remoteAccess(r.rkey(), r.remoteAddress(), Long.BYTES, Access.REMOTE_ATOMIC.bit(),
                target -> original[0] = op == Opcode.ATOMIC_CMP_AND_SWP
                        ? (long) LONG.compareAndExchange(target, 0L, r.compareAdd(), r.swap())
                        : (long) LONG.getAndAdd(target, 0L, r.compareAdd()));
        return done ? Wire.Response.atomic(original[0]) : accessError();
    }

    /** The responder rejects an access: it moves to ERROR too, as rxe does, and touches nothing. */
    private Wire.Response accessError() {
        enterError();
        return Wire.Response.ACCESS_ERROR;
    }

    /**
     * Runs {@code copy} on {@code [address, address + length)} if {@code rkey} lets the peer reach it with
     * {@code right}: checked against the QP's own remote rights, the key (region, or bound window and its range,
     * rights and — for type 2 — the QP that bound it), and the protection domain. Neither the region's
     * registration nor the window's binding can end while the copy runs.
     *
     * @return false if the access is not allowed (nothing was touched)
     */
    private boolean remoteAccess(int rkey, long address, long length, int right, Consumer<MemorySegment> copy) {
        if ((access & right) == 0) return false;
        Object target = device.keys.get(rkey >>> 8);
        if (target instanceof SoftMr mr) return reaches(mr, rkey, address, length, right) && mr.access(address, length, copy);
        return target instanceof SoftMw mw && mw.pd == pd && mw.access(rkey, address, length, right, this, copy);
    }

    /** {@link #remoteAccess} of a WRITE's payload; into a region without a lambda, the data path's common case. */
    private boolean remoteWrite(Wire.Request r) {
        int right = Access.REMOTE_WRITE.bit();
        if ((access & right) != 0 && device.keys.get(r.rkey() >>> 8) instanceof SoftMr mr) {
            return reaches(mr, r.rkey(), r.remoteAddress(), r.length(), right)
                    && mr.copyIn(r.remoteAddress(), r.payload(), 0, r.length());
        }
        return remoteAccess(r.rkey(), r.remoteAddress(), r.length(), right,
                dst -> MemorySegment.copy(r.payload(), 0, dst, ValueLayout.JAVA_BYTE, 0, r.length()));
    }

    /** Whether {@code rkey}, naming {@code mr}, lets this QP's peer reach the range with {@code right}. */
    private boolean reaches(SoftMr mr, int rkey, long address, long length, int right) {
        return mr.key == rkey && mr.pd == pd && (mr.access & right) != 0 && mr.covers(address, length);
    }

    // ---- local memory ------------------------------------------------------------------------------------------

    /** The region {@code lkey} names, if it covers the entry and belongs to {@code owner}. */
    private SoftMr localRegion(long address, int length, int lkey, boolean write, SoftPd owner) {
        if (!(device.keys.get(lkey >>> 8) instanceof SoftMr mr)) return null;
        boolean ok = mr.key == lkey && mr.pd == owner && mr.covers(address, length)
                && (!write || (mr.access & Access.LOCAL_WRITE.bit()) != 0);
        return ok ? mr : null;
    }

    private boolean locallyWritable(Sges sges) {
        for (int i = 0; i < sges.count; i++) {
            if (localRegion(sges.address[i], sges.length[i], sges.lkey[i], true, pd) == null) return false;
        }
        return true;
    }

    /**
     * Gathers the entries' bytes into {@link #payload} (grown if too small); returns how many, or -1 if an entry is
     * not covered by a valid lkey. Requester only.
     */
    private int gather(Sges sges) {
        long total = sges.totalLength();
        if (total > Integer.MAX_VALUE) return -1;
        if (payload.length < total) payload = new byte[(int) Math.max(total, Math.min(2L * payload.length, Integer.MAX_VALUE))];
        int offset = 0;
        for (int i = 0; i < sges.count; i++) {
            SoftMr mr = localRegion(sges.address[i], sges.length[i], sges.lkey[i], false, pd);
            if (mr == null || !mr.copyOut(sges.address[i], payload, offset, sges.length[i])) return -1;
            offset += sges.length[i];
        }
        return offset;
    }

    /**
     * Writes the first {@code length} bytes of {@code data} across the entries; false if an entry is not writable
     * through a valid lkey of {@code owner}.
     */
    private boolean scatter(Sges sges, byte[] data, int length, SoftPd owner) {
        int offset = 0;
        for (int i = 0; i < sges.count && offset < length; i++) {
            int n = Math.min(sges.length[i], length - offset);
            SoftMr mr = localRegion(sges.address[i], sges.length[i], sges.lkey[i], true, owner);
            if (mr == null || !mr.copyIn(sges.address[i], data, offset, n)) return false;
            offset += n;
        }
        return true;
    }
}
