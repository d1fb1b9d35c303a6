package io.mooring.verbs.soft;

/**
 * The results of the last atomics a soft responder executed, so that a retransmitted atomic is answered with its
 * original value instead of being executed again. A requester with several atomics in flight resends them all when an
 * answer is late (go-back-N), so one remembered result is not enough: a NIC keeps {@code max_dest_rd_atomic} of them,
 * and so does this. Allocated at the first atomic (most QPs never execute one). Guarded by the responder's lock.
 */
final class AtomicReplay {
    private int[] psns = {};
    private long[] originals = {};
    private int next;  // where the next result goes
    private int count; // results remembered

    /** The atomic of {@code psn} was executed and found {@code original}; the QP keeps {@code depth} results. */
    void executed(int psn, long original, int depth) {
        if (psns.length != depth) { // first use, or a new connection negotiated another depth
            psns = new int[depth];
            originals = new long[depth];
            forget();
        }
        psns[next] = psn;
        originals[next] = original;
        next = (next + 1) % depth;
        count = Math.min(count + 1, depth);
    }

    /** The answer to a retransmission of the atomic of {@code psn}: its original value, or dropped if too old. */
    Wire.Response replay(int psn) {
        for (int k = 1; k <= count; k++) {
            int i = Math.floorMod(next - k, psns.length);
            if (psns[i] == psn) return Wire.Response.atomic(originals[i]);
        }
        return Wire.Response.DROPPED;
    }

    /** A new connection: nothing of the previous one is replayed. */
    void forget() {
        next = 0;
        count = 0;
    }
}
