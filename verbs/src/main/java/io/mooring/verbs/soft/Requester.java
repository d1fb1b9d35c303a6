package io.mooring.verbs.soft;

import io.mooring.verbs.WcStatus;
import io.mooring.verbs.spi.ProviderThreads;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.QpState;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The requester of a soft QP: executes its send queue in order on its own thread, with the RC retry rules —
 * silence is retried {@code retry_cnt} times after the ACK timeout, an RNR NAK {@code rnr_retry} times (7: forever)
 * after the responder's RNR timer — and stops retrying as soon as the QP moves to ERROR (the request flushes) or is
 * reset (it is discarded). A failed request completes with its error status, signaled or not, and moves the QP to
 * ERROR; the requests behind it flush. Sending allocates nothing: the request in hand, its packet and its payload
 * (where a READ's answer lands too) are this requester's own, reused.
 *
 * <p>It waits for work by spinning {@link #SPIN_NANOS}, then parking with {@link LockSupport} (a {@code Condition}
 * would allocate a node per wait): a poster that posts again within the spin hands over without allocating, and an
 * idle requester burns no core. After {@link #IDLE_NANOS} without work its thread ends, and the next change starts
 * one: an endpoint's many quiet sessions keep no thread (nor its stack) per QP. Its thread is virtual, as an endpoint
 * with hundreds of peers must not hold a platform thread for each; but waking a parked virtual thread allocates its
 * scheduler's task, so a loaded machine that deschedules the poster past the spin sees bytes per post. With
 * {@value SoftProvider#PLATFORM_REQUESTERS_PROPERTY}{@code =true} the thread is a platform thread, whose wake-up
 * allocates nothing: the hand-off is then allocation-free however the threads are scheduled (a NIC's engine is not a
 * thread of the application's either).
 */
final class Requester {
    /** IBTA's RNR NAK timer table in microseconds, index = the 5-bit code (0 means 655.36 ms). */
    static final int[] RNR_DELAY_MICROS = {655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640,
        960, 1280, 1920, 2560, 3840, 5120, 7680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880,
        163_840, 245_760, 327_680, 491_520};
    /** How long an idle requester spins for the next post before it parks: waking a parked one allocates. */
    private static final long SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(20);
    /** How long a requester waits for work before its thread ends (the next change starts another). */
    static final long IDLE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /** The first payload buffer; it grows to the largest message sent (a QP that sends little keeps it small). */
    private static final int PAYLOAD_BUFFER = 64;

    private static final VarHandle RUNNING;

    static {
        try {
            RUNNING = MethodHandles.lookup().findVarHandle(Requester.class, "running", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final SoftQp qp;
    private final boolean platform = Boolean.getBoolean(SoftProvider.PLATFORM_REQUESTERS_PROPERTY);
    private final SendWork current;
    private final SendWindow window;
    private final Wire.Request request = new Wire.Request();
    private byte[] payload = new byte[PAYLOAD_BUFFER];
    private int takenAt; // the QP's resets when the request in hand was taken
    private volatile boolean parked; // parked or about to: a change must unpark it
    @SuppressWarnings("unused") // through RUNNING
    private volatile boolean running; // a thread runs (or is being started): set by whoever starts one
    private volatile Thread thread; // the thread that runs; null while none does

    Requester(SoftQp qp, int maxInline) {
        this.qp = qp;
        this.current = new SendWork(maxInline);
        this.window = new SendWindow(qp, this);
    }

    /**
     * The QP changed for the requester (a post, a modify, a destroy — written to a volatile field before this call):
     * unparks its thread if it is parked, starts one if none runs. The requester sets {@link #parked} before it checks
     * for changes, and clears {@link #running} before it checks a last time as it ends; the changer writes its change
     * before it reads the flags, so one of the two sees the other.
     */
    void wake() {
        if (parked) LockSupport.unpark(thread);
        if (!running && RUNNING.compareAndSet(this, false, true)) {
            Thread t = (platform ? Thread.ofPlatform().daemon(true) : Thread.ofVirtual())
                    .name("soft-qp-" + qp.qpNumber()).unstarted(this::run);
            thread = t; // before it starts: a stop finds it
            t.start();
        }
    }

    /** Stops the thread (the QP is destroyed) and waits until it has, unless called from it. */
    void stop() {
        Thread t = thread;
        if (t == null) return; // never started: a thread a racing change starts finds the QP destroyed
        t.interrupt();
        if (Thread.currentThread() == t) return;
        ProviderThreads.joinUninterruptibly(t);
    }

    private void run() {
        try {
            SendWork work = current;
            while (true) {
                boolean flush = false;
                boolean windowed = false;
                boolean taken = false;
                int seen;
                qp.lock.lock();
                try {
                    while (true) {
                        if (qp.destroyed) return;
                        seen = qp.changes;
                        if (hasWork()) {
                            if (qp.state == QpState.RTS && window.accepts(qp.sendQueue.peek())) {
                                qp.sendQueue.take(window.next());
                                windowed = true;
                                break;
                            }
                            if (window.isEmpty()) { // the next one waits for those in flight to complete
                                qp.sendQueue.take(work);
                                flush = qp.state == QpState.ERROR;
                                takenAt = qp.resets;
                                taken = true;
                                break;
                            }
                        }
                        if (!window.isEmpty()) break;
                        qp.lock.unlock();
                        boolean stay;
                        try {
                            stay = awaitChange(seen);
                        } finally {
                            relock();
                        }
                        if (!stay) return; // idle: the next change starts another thread
                    }
                } finally {
                    qp.lock.unlock();
                }
                if (windowed) {
                    window.send();
                } else if (!taken) {
                    window.progress(seen);
                } else if (flush) {
                    complete(work, WcStatus.WR_FLUSH_ERR, 0);
                } else {
                    WcStatus status = execute(work);
                    if (status != WcStatus.SUCCESS) failRequest(work, status, takenAt);
                }
            }
        } catch (InterruptedException e) {
            // destroyed
        }
    }

    /** Whether a request is queued and the QP executes (RTS) or flushes (ERROR) its send queue. Caller holds qp.lock. */
    private boolean hasWork() {
        return !qp.sendQueue.isEmpty() && (qp.state == QpState.RTS || qp.state == QpState.ERROR);
    }

    /**
     * Waits for a change of the QP after {@code seen}: spins a little first, so an application posting again right
     * after its completion (a ping-pong, a pipeline) finds the requester awake, then parks — at most
     * {@link #IDLE_NANOS}. Returns false if it waited that long for nothing: this thread ends (it no longer runs).
     */
    private boolean awaitChange(int seen) throws InterruptedException {
        long end = System.nanoTime() + SPIN_NANOS;
        while (unchanged(seen) && System.nanoTime() - end < 0) Thread.onSpinWait();
        long idleEnd = end + IDLE_NANOS;
        parked = true;
        try {
            for (long left = IDLE_NANOS; unchanged(seen) && left > 0; left = idleEnd - System.nanoTime()) {
                LockSupport.parkNanos(this, left);
                if (Thread.interrupted()) throw new InterruptedException();
            }
        } finally {
            parked = false; // before it ends: a thread started next may park meanwhile
        }
        if (!unchanged(seen)) return true;
        thread = null; // before running is cleared: a thread started after that is never overwritten
        running = false;
        // a change made before that write is seen here; one made after it starts a thread of its own
        if (unchanged(seen) || !RUNNING.compareAndSet(this, false, true)) return false;
        thread = Thread.currentThread(); // it runs on: a change came after all
        return true;
    }

    private boolean unchanged(int seen) {
        return qp.changes == seen && !qp.destroyed;
    }

    /**
     * Waits, for the {@link SendWindow}, until the QP changes after {@code seen}, an answer after {@code answered}
     * arrives on {@code link} (or it closes), or {@code deadline} passes. It parks at once: an answer is a network
     * round trip away, which a spin would not outlast, and spinning on a loaded host takes the core the answer needs.
     */
    void awaitWindow(int seen, TcpLink link, int answered, long deadline) throws InterruptedException {
        link.wakes(Thread.currentThread());
        parked = true;
        try {
            for (long left = deadline - System.nanoTime(); waiting(seen, link, answered) && left > 0;
                 left = deadline - System.nanoTime()) {
                LockSupport.parkNanos(this, left);
                if (Thread.interrupted()) throw new InterruptedException();
            }
        } finally {
            parked = false;
        }
    }

    private boolean waiting(int seen, TcpLink link, int answered) {
        return unchanged(seen) && link.arrived() == answered && !link.isClosed();
    }

    /**
     * Takes the lock back after waiting, spinning on it a while first: a post holds it only briefly, and a requester
     * that queued for it would allocate its queue node.
     */
    private void relock() {
        long end = System.nanoTime() + SPIN_NANOS;
        while (!qp.lock.tryLock()) {
            if (System.nanoTime() - end >= 0) {
                qp.lock.lock();
                return;
            }
            Thread.onSpinWait();
        }
    }

    /**
     * A request taken when the QP had been reset {@code takenAt} times failed: it completes with {@code status} and
     * the QP moves to ERROR, unless a reset discarded it meanwhile.
     */
    void failRequest(SendWork w, WcStatus status, int takenAt) {
        qp.lock.lock();
        try {
            if (qp.resets == takenAt) qp.fail(qp.sendCq, w.wrId, w.opcode.completion().code(), status);
        } finally {
            qp.lock.unlock();
        }
    }

    /** Whether the request in hand must not be sent (again): its QP was qp.destroyed, reset, or moved to ERROR. */
    private boolean requestStopped() {
        return qp.destroyed || qp.state == QpState.ERROR || qp.resets != takenAt;
    }

    void complete(SendWork w, WcStatus status, int byteLength) {
        if (status == WcStatus.SUCCESS && !w.signaled) return;
        if (!qp.sendCq.push(w.wrId, status.code(), w.opcode.completion().code(), byteLength, 0, 0, qp.qpNumber())) {
            qp.completionLost();
        }
    }

    /** Runs one request; pushes its success completion itself and returns SUCCESS, or returns the error. */
    private WcStatus execute(SendWork w) throws InterruptedException {
        return switch (w.opcode) {
            case LOCAL_INV -> heldBack() ? WcStatus.WR_FLUSH_ERR : invalidateLocally(w);
            case BIND_MW -> heldBack() ? WcStatus.WR_FLUSH_ERR : bind(w);
            default -> {
                WcStatus status = prepare(w, qp.sendPsn);
                if (status != WcStatus.SUCCESS) yield status;
                var response = transmit(request);
                status = statusOf(response);
                yield status == WcStatus.SUCCESS ? finish(w, response, payload, request.length()) : status;
            }
        };
    }

    /**
     * Holds the local request in hand back as long as the fault plan delays it (the window keeps its binding
     * meanwhile); true if its QP stopped during the delay, so that it flushes, as on a NIC.
     */
    private boolean heldBack() throws InterruptedException {
        FaultInjector f = qp.faults;
        long nanos = f == null ? 0 : f.localDelayNanos();
        if (nanos == 0) return false;
        awaitRetry(nanos);
        return requestStopped();
    }

    private WcStatus invalidateLocally(SendWork w) {
        SoftMw mw = qp.device.keys.window(w.invalidateRkey);
        if (mw == null || mw.pd != qp.pd || mw.type != MwType.TYPE_2 || !mw.invalidate(w.invalidateRkey)) {
            return WcStatus.MW_BIND_ERR;
        }
        complete(w, WcStatus.SUCCESS, 0);
        return WcStatus.SUCCESS;
    }

    private WcStatus bind(SendWork w) {
        SoftMw mw = w.window;
        SoftMr mr = w.bindRegion;
        boolean allowed = mw.pd == qp.pd && mr.pd == qp.pd && qp.device.keys.region(mr.key) == mr
                && (mr.access & Access.MW_BIND.bit()) != 0 && mr.covers(w.bindAddress, w.bindLength)
                && Access.writableFor(w.bindAccess, mr.access)
                && (mw.type == MwType.TYPE_1 || (!mw.isBound() && (w.newRkey >>> 8) == mw.index()));
        if (!allowed) return WcStatus.MW_BIND_ERR;
        mw.bind(w.newRkey, mr, w.bindAddress, w.bindLength, w.bindAccess, qp);
        complete(w, WcStatus.SUCCESS, 0);
        return WcStatus.SUCCESS;
    }

    /**
     * Makes {@link #request} of the remote request {@code w} under {@code psn}, its payload gathered into
     * {@link #payload}: SUCCESS, or the local error that fails it before it goes out.
     */
    WcStatus prepare(SendWork w, int psn) {
        int length = 0;
        byte[] data = null;
        switch (w.opcode) {
            case RDMA_READ -> {
                long total = w.sges.totalLength();
                if (total > Integer.MAX_VALUE) return WcStatus.LOC_LEN_ERR;
                if (!w.sges.writable(qp.device, qp.pd)) return WcStatus.LOC_PROT_ERR;
                reserve(total); // where the answer lands, one at a time
                length = (int) total;
                data = payload;
            }
            case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD -> {
                if (w.sges.count != 1 || w.sges.length(0) != Long.BYTES) return WcStatus.LOC_LEN_ERR;
                if (!w.sges.writable(qp.device, qp.pd)) return WcStatus.LOC_PROT_ERR;
                length = Long.BYTES;
            }
            default -> { // SEND, WRITE, with or without immediate
                data = w.inline;
                length = w.inlineLength;
                if (length < 0) {
                    length = gather(w.sges);
                    if (length < 0) return WcStatus.LOC_PROT_ERR;
                    data = payload;
                }
            }
        }
        request.set(w.opcode.code(), qp.qpNumber(), psn, w.remoteAddress, w.rkey, length, data, w.immediate,
                w.compareAdd, w.swap);
        return WcStatus.SUCCESS;
    }

    /** The request made last by {@link #prepare}. */
    Wire.Request request() {
        return request;
    }

    /**
     * Completes the remote request {@code w} of {@code length} bytes that the responder acknowledged: a READ's bytes
     * ({@code read}) or an atomic's original value go to its local memory first. SUCCESS, or the local error.
     */
    WcStatus finish(SendWork w, Wire.Response answer, byte[] read, int length) {
        switch (w.opcode) {
            case RDMA_READ -> {
                if (!w.sges.scatter(read, length, qp.device, qp.pd)) return WcStatus.LOC_PROT_ERR;
            }
            case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD -> {
                byte[] original = MemorySegment.ofArray(new long[] {answer.atomicOriginal()}).toArray(ValueLayout.JAVA_BYTE);
                if (!w.sges.scatter(original, original.length, qp.device, qp.pd)) return WcStatus.LOC_PROT_ERR;
            }
            default -> { }
        }
        complete(w, WcStatus.SUCCESS, length);
        return WcStatus.SUCCESS;
    }

    static WcStatus statusOf(Wire.Response r) {
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
        long ackTimeoutNanos = ackTimeoutNanos();
        int retries = qp.retryCount;
        int rnrRetries = qp.rnrRetry;
        while (true) {
            if (requestStopped()) return null;
            Link l = qp.link.current();
            FaultInjector f = qp.faults;
            Wire.Response r = f != null ? f.exchange(l, request, ackTimeoutNanos)
                    : l == null ? Wire.Response.DROPPED : l.exchange(request, ackTimeoutNanos);
            boolean connecting = l == null && (f == null || !f.isCut());
            if (r.kind() == Wire.Kind.DROPPED && connecting && qp.link.awaitLink()) continue; // not a retry
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
                    if (r.kind() == Wire.Kind.ACK) qp.sendPsn = Wire.nextPsn(qp.sendPsn);
                    return r;
                }
            }
        }
    }

    /** The QP's local ACK timeout (4.096 µs × 2^timeout), kept within [1 ms, 8 s]. */
    long ackTimeoutNanos() {
        return Math.min(TimeUnit.SECONDS.toNanos(8), Math.max(TimeUnit.MILLISECONDS.toNanos(1), 4096L << qp.timeout));
    }

    /** Waits {@code nanos} (a retry, a delayed request), or less if the QP stops meanwhile (every modify wakes it). */
    private void awaitRetry(long nanos) throws InterruptedException {
        long deadline = System.nanoTime() + nanos;
        parked = true;
        try {
            for (long left = nanos; left > 0 && !requestStopped(); left = deadline - System.nanoTime()) {
                LockSupport.parkNanos(this, left);
                if (Thread.interrupted()) throw new InterruptedException();
            }
        } finally {
            parked = false;
        }
    }

    /**
     * Gathers the entries' bytes into {@link #payload}, grown if too small; returns how many, or -1 if an entry is
     * not covered by a valid lkey.
     */
    private int gather(Sges sges) {
        long total = sges.totalLength();
        if (total > Integer.MAX_VALUE) return -1;
        reserve(total);
        return sges.gather(payload, qp.device, qp.pd);
    }

    /** Grows {@link #payload} to hold {@code bytes} (at most {@link Integer#MAX_VALUE}), at least doubling it. */
    private void reserve(long bytes) {
        if (payload.length < bytes) {
            payload = new byte[(int) Math.max(bytes, Math.min(2L * payload.length, Integer.MAX_VALUE))];
        }
    }
}
