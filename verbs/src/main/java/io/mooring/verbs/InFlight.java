package io.mooring.verbs;

import java.util.concurrent.CompletableFuture;

/**
 * The outstanding work requests of one queue (send or receive) of one QP, in post order: a ring of
 * {@code depth} preallocated slots, so posting allocates nothing and posting past the depth is refused.
 *
 * <p>A request's Mooring id is its sequence number (with {@link #RECEIVE_BIT} for the receive queue). A
 * completion for sequence {@code s} retires every slot up to {@code s}: on a reliable connection requests
 * complete in order, and unsignaled requests before a signaled one succeeded with it.
 */
final class InFlight extends RequestSlots {
    /** What to do once a request retires (a window bind updates the window's key and binding). */
    interface Outcome {
        /** @param success whether the request succeeded (false also when it was discarded) */
        void completed(boolean success);
    }

    private final String queue;
    private final boolean receive;
    private final int depth;
    private final long[] userWrId;
    private final WcOpcode[] opcode;
    private final MemoryRegion[][] holds;
    private final int[] holdCount;
    private final CompletableFuture<?>[] futures;
    private final Outcome[] outcome;
    private long head; // oldest outstanding sequence; guarded by lock
    private long tail; // next sequence to post; guarded by lock

    InFlight(String queue, boolean receive, int depth) {
        this.queue = queue;
        this.receive = receive;
        this.depth = depth;
        this.userWrId = new long[depth];
        this.opcode = new WcOpcode[depth];
        this.holds = new MemoryRegion[depth][MAX_HOLDS];
        this.holdCount = new int[depth];
        this.futures = new CompletableFuture<?>[depth];
        this.outcome = new Outcome[depth];
    }

    /**
     * Claims the next slot (caller holds {@link #lock}) and pins every region of {@code sgl} plus
     * {@code extra} (may be null) until the request retires.
     *
     * @return the id to post the request with
     * @throws QueueFullException if {@code depth} requests are outstanding
     * @throws io.mooring.lifecycle.ResourceClosedException if a region is closed (nothing is pinned then)
     */
    long claim(String verb, Object qp, long wrId, WcOpcode op, ScatterGatherList sgl, MemoryRegion extra,
               CompletableFuture<WorkCompletion> future, Outcome action) {
        // qp is named only when refused: building its name on every post would allocate
        if (closedReason != null) throw new IllegalStateException(qp + ": " + closedReason);
        if (tail - head == depth) throw new QueueFullException(verb, qp.toString(), queue, depth);
        int slot = (int) (tail % depth);
        holdCount[slot] = hold(sgl, extra, holds[slot]);
        userWrId[slot] = wrId;
        opcode[slot] = op;
        futures[slot] = future;
        outcome[slot] = action;
        long seq = tail++;
        return receive ? seq | RECEIVE_BIT : seq;
    }

    /** Gives back the slot just claimed when the provider refused the post (caller holds {@link #lock}). */
    void unclaim() {
        int slot = (int) (--tail % depth);
        if (outcome[slot] != null) outcome[slot].completed(false);
        clear(slot);
    }

    @Override
    boolean retireLocked(long id, boolean success, Retired into) {
        long seq = id & ~RECEIVE_BIT; // a shared receive queue's id (SHARED_BIT) is never in [head, tail)
        if (seq < head || seq >= tail) return false;
        for (long s = head; s < seq; s++) { // unsignaled predecessors: they succeeded before this one
            int slot = (int) (s % depth);
            if (outcome[slot] != null) outcome[slot].completed(true);
            clear(slot);
        }
        int slot = (int) (seq % depth);
        into.set(userWrId[slot], opcode[slot], futures[slot]);
        if (outcome[slot] != null) outcome[slot].completed(success);
        clear(slot);
        head = seq + 1;
        return true;
    }

    @Override
    void discardAllLocked(String reason) {
        for (long s = head; s < tail; s++) {
            int slot = (int) (s % depth);
            fail(futures[slot], reason);
            if (outcome[slot] != null) outcome[slot].completed(false);
            clear(slot);
        }
        head = tail;
    }

    @Override
    int outstandingLocked() {
        return (int) (tail - head);
    }

    private void clear(int slot) {
        release(holds[slot], holdCount[slot]);
        holdCount[slot] = 0;
        futures[slot] = null;
        outcome[slot] = null;
        opcode[slot] = null;
    }
}
