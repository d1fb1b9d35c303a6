package io.mooring.verbs.soft;

import io.mooring.verbs.WcStatus;
import io.mooring.verbs.values.Opcode;
import io.mooring.verbs.values.QpState;
import java.util.concurrent.TimeUnit;

/**
 * The requests a soft QP's requester has sent over its TCP link and not yet seen answered: what lets one soft QP keep
 * many requests in flight, as a NIC does, instead of paying a round trip for each. Requests join in send-queue order,
 * go out back to back (one flush for those that came together), and complete in that order as their answers come.
 * READs and atomics in flight stay within the QP's {@code max_rd_atomic}, as a NIC's do (the request that would pass
 * it, and those behind it, wait in the send queue), and the payload in flight within {@link #MAX_BYTES}, so that
 * what two peers have in flight towards each other fits in their sockets' buffers (neither's reader waits on a
 * write the other's is not reading).
 *
 * <p>The retry rules are the single request's ({@link Requester}), applied IBTA's way, go-back-N: an answer other than
 * an ACK to the oldest request — an RNR NAK, or none (the responder was not ready, the connection broke, the peer is
 * hung) — sends every request in flight again from that one, after the RNR timer or the ACK timeout, counting the
 * oldest request's retries; the responder dropped the later ones as a gap (or acknowledges, never executes again, any
 * it had executed). A NAK fails the oldest request and moves the QP to ERROR; the rest flush, in order. Local
 * requests (binds, invalidations), faults injected and a peer in the same device use the single-request path: they
 * wait until the window is empty. Requester thread only.
 */
final class SendWindow {
    /** The most requests in flight at once. */
    static final int MAX_REQUESTS = 64;
    /** The most payload bytes in flight at once (either way), beyond the oldest request's. */
    static final long MAX_BYTES = 128 * 1024;
    private static final byte[] NO_BYTES = {};

    private final SoftQp qp;
    private final Requester requester;
    private static final SendWork[] NONE = {};
    private static final int[] NO_INTS = {};

    private SendWork[] works = NONE;  // a ring, grown up to MAX_REQUESTS by the first requests in flight together
    private int[] psns = NO_INTS;
    private int[] seqs = NO_INTS;     // the link's number of each one's last sending
    private int[] lengths = NO_INTS;  // payload bytes of each
    private int head;
    private int count;
    private int sent;            // how many of the oldest went out since the window filled or went back
    private int reads;           // READs and atomics in flight
    private long bytes;          // payload bytes in flight
    private TcpLink link;        // the connection they went out on
    private boolean unflushed;   // requests were posted on it since its last flush
    private int takenAt;         // the QP's resets when the first of them was taken
    private int retries;         // left for the oldest
    private int rnrRetries;      // left for the oldest
    private long resendAt;       // when they go out again after going back
    private boolean goingBack;
    private long overdueAt;      // when the oldest one's answer is late

    SendWindow(SoftQp qp, Requester requester) {
        this.qp = qp;
        this.requester = requester;
    }

    boolean isEmpty() {
        return count == 0;
    }

    /**
     * Whether {@code next}, the oldest request of a QP in RTS, joins the window now: a remote request over a TCP link
     * with no faults injected, while nothing waits to go again and the window's limits leave room for it. Caller
     * holds the QP's lock.
     */
    boolean accepts(SendWork next) {
        if (goingBack || sent < count || count == MAX_REQUESTS || qp.faults != null || !isRemote(next.opcode)) {
            return false;
        }
        if (count == 0) { // the first one: the connection they all go over
            if (!(qp.link.current() instanceof TcpLink l)) return false;
            link = l;
            takenAt = qp.resets;
            return true;
        }
        if (isReadOrAtomic(next.opcode) && reads >= qp.readDepth) return false;
        return bytes + payloadLength(next) <= MAX_BYTES && !link.isClosed();
    }

    /** The entry the QP's oldest request is copied into, behind those in flight; {@link #send} sends it. */
    SendWork next() {
        if (count == works.length) grow();
        int i = slot(count);
        if (works[i] == null) works[i] = new SendWork(qp.capabilities().maxInlineData());
        return works[i];
    }

    /** Sends the request just copied into {@link #next()} (which {@link #accepts} let in), with the QP's next PSN. */
    void send() {
        int i = slot(count);
        SendWork w = works[i];
        if (count == 0) newOldest();
        psns[i] = qp.sendPsn;
        qp.sendPsn = Wire.nextPsn(qp.sendPsn);
        lengths[i] = (int) Math.min(Integer.MAX_VALUE, payloadLength(w));
        bytes += lengths[i];
        if (isReadOrAtomic(w.opcode)) reads++;
        count++;
        sendWaiting();
    }

    /**
     * Moves the window on, without waiting if it can: sends what waits to go (again), completes those whose answers
     * came, goes back or fails on the oldest one's; otherwise waits for an answer, the QP's next change after
     * {@code seen} (a post, a modify), or the next deadline. A QP in ERROR flushes what is in flight; a reset or
     * destroy discards it.
     */
    void progress(int seen) throws InterruptedException {
        if (stopped()) {
            stop();
            return;
        }
        if (goingBack && System.nanoTime() - resendAt >= 0) resend();
        if (!goingBack) sendWaiting();
        flush();
        int answered = link.arrived();
        if (takeAnswers() || count == 0 || stopped()) return;
        long now = System.nanoTime();
        if (!goingBack && (link.isClosed() || now - overdueAt >= 0)) {
            goBack(WcStatus.RETRY_EXC_ERR, requester.ackTimeoutNanos()); // no answer is coming
            return;
        }
        requester.awaitWindow(seen, link, answered, goingBack ? resendAt : overdueAt);
    }

    /** Completes the oldest requests whose answers came; true if any answer was taken. */
    private boolean takeAnswers() {
        boolean took = false;
        while (count > 0 && !goingBack && sent > 0) {
            int i = slot(0);
            Wire.Response answer = link.answer(seqs[i]);
            if (answer == null) return took;
            took = true;
            switch (answer.kind()) {
                case ACK -> {
                    SendWork w = works[i];
                    byte[] read = answer.data() == null ? NO_BYTES : answer.data();
                    WcStatus status = w.opcode == Opcode.RDMA_READ && read.length < lengths[i]
                            ? WcStatus.REM_OP_ERR // the peer answered a READ with fewer bytes than it asked
                            : requester.finish(w, answer, read, lengths[i]);
                    link.recycle(answer.data()); // its bytes are where the request wanted them now
                    if (status != WcStatus.SUCCESS) {
                        fail(status);
                        return true;
                    }
                    removeOldest();
                }
                case RNR -> {
                    long delay = TimeUnit.MICROSECONDS.toNanos(Requester.RNR_DELAY_MICROS[answer.rnrTimer() & 31]);
                    goBack(WcStatus.RNR_RETRY_EXC_ERR, delay);
                }
                case DROPPED -> goBack(WcStatus.RETRY_EXC_ERR, requester.ackTimeoutNanos());
                default -> {
                    fail(Requester.statusOf(answer));
                    return true;
                }
            }
        }
        return took;
    }

    /**
     * The oldest request must go again, after {@code delay}, and every one behind it with it; or, if its retries of
     * that kind ran out, it fails with {@code exhausted}.
     */
    private void goBack(WcStatus exhausted, long delay) {
        boolean rnr = exhausted == WcStatus.RNR_RETRY_EXC_ERR;
        if (rnr ? rnrRetries != 7 && rnrRetries-- == 0 : retries-- == 0) {
            fail(exhausted);
            return;
        }
        goingBack = true;
        resendAt = System.nanoTime() + delay;
    }

    /** Sends every request in flight again, over the QP's connection now (one may have replaced a broken one). */
    private void resend() throws InterruptedException {
        goingBack = false;
        sent = 0;
        Link current = qp.link.current();
        if (current == null && qp.link.awaitLink()) current = qp.link.current(); // a reconnect under way, once
        if (current instanceof TcpLink l) {
            link = l;
            return;
        }
        goBack(WcStatus.RETRY_EXC_ERR, requester.ackTimeoutNanos()); // no connection: counts as no answer
    }

    /** Posts the requests not sent (again) yet, in order, stopping at one that fails locally. */
    private void sendWaiting() {
        while (sent < count) {
            int i = slot(sent);
            WcStatus status = requester.prepare(works[i], psns[i]);
            if (status != WcStatus.SUCCESS) {
                if (sent == 0) fail(status); // its turn: it fails, after those before it completed
                return; // the rest wait behind it
            }
            int seq = link.post(requester.request());
            if (seq < 0) return; // the connection broke: the oldest one's answer will not come
            seqs[i] = seq;
            unflushed = true;
            if (sent++ == 0) overdueAt = System.nanoTime() + Math.max(requester.ackTimeoutNanos(), TcpLink.HUNG_PEER_NANOS);
        }
    }

    private void flush() {
        if (unflushed) {
            unflushed = false;
            link.flush();
        }
    }

    private void removeOldest() {
        int i = slot(0);
        bytes -= lengths[i];
        if (isReadOrAtomic(works[i].opcode)) reads--;
        head = (head + 1) % works.length;
        count--;
        sent = Math.max(0, sent - 1); // a request failing before it went out was not sent
        newOldest();
        if (sent > 0) overdueAt = System.nanoTime() + Math.max(requester.ackTimeoutNanos(), TcpLink.HUNG_PEER_NANOS);
    }

    private void newOldest() {
        retries = qp.retryCount;
        rnrRetries = qp.rnrRetry;
    }

    /** The oldest request fails with {@code status}: the QP moves to ERROR, and the next progress flushes the rest. */
    private void fail(WcStatus status) {
        requester.failRequest(works[slot(0)], status, takenAt);
        removeOldest();
    }

    private boolean stopped() {
        return qp.destroyed || qp.state == QpState.ERROR || qp.resets != takenAt;
    }

    /** The QP stopped: in ERROR the requests in flight complete flushed, in order; after a reset they are gone. */
    private void stop() {
        boolean flush = !qp.destroyed && qp.resets == takenAt;
        for (; count > 0; count--, head = (head + 1) % works.length) {
            if (flush) requester.complete(works[head], WcStatus.WR_FLUSH_ERR, 0);
        }
        head = sent = reads = 0;
        bytes = 0;
        goingBack = unflushed = false;
        link = null;
    }

    private int slot(int index) {
        return (head + index) % works.length;
    }

    /** Doubles the ring, the requests in flight first, in order. */
    private void grow() {
        int size = Math.min(MAX_REQUESTS, Math.max(2, 2 * works.length));
        var w = new SendWork[size];
        int[] p = new int[size];
        int[] s = new int[size];
        int[] l = new int[size];
        for (int k = 0; k < count; k++) {
            int from = slot(k);
            w[k] = works[from];
            p[k] = psns[from];
            s[k] = seqs[from];
            l[k] = lengths[from];
        }
        for (int k = count; k < works.length; k++) w[k] = works[slot(k)]; // entries made before, reused
        works = w;
        psns = p;
        seqs = s;
        lengths = l;
        head = 0;
    }

    private static boolean isRemote(Opcode op) {
        return op != Opcode.LOCAL_INV && op != Opcode.BIND_MW;
    }

    private static boolean isReadOrAtomic(Opcode op) {
        return op == Opcode.RDMA_READ || op == Opcode.ATOMIC_CMP_AND_SWP || op == Opcode.ATOMIC_FETCH_AND_ADD;
    }

    /** The bytes {@code w} moves: what it sends or writes, or what it reads. */
    private static long payloadLength(SendWork w) {
        if (w.opcode == Opcode.ATOMIC_CMP_AND_SWP || w.opcode == Opcode.ATOMIC_FETCH_AND_ADD) return Long.BYTES;
        return w.inlineLength >= 0 ? w.inlineLength : w.sges.totalLength();
    }
}
