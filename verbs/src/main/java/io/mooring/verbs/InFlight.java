package io.mooring.verbs;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The outstanding work requests of one queue (send or receive) of one QP, in post order: a ring of
 * {@code depth} preallocated slots, so posting allocates nothing and posting past the depth is refused.
 *
 * <p>Each request is posted to the provider under a Mooring id that encodes the queue and the request's
 * sequence number; the slot keeps what the provider does not: the caller's own id, what was posted (the NIC
 * does not report the opcode of a failed request), the regions the request keeps alive, and the future or
 * window update waiting for it. A completion for sequence {@code s} retires every slot up to {@code s}: on a
 * reliable connection requests complete in order, and unsignaled requests before a signaled one succeeded
 * with it.
 */
final class InFlight {
    static final long RECEIVE_BIT = 1L << 62;
    private static final int MAX_HOLDS = ScatterGatherList.CAPACITY + 1;

    /** What to do once a request retires (a window bind updates the window's key and binding). */
    interface Outcome {
        /** @param success whether the request succeeded (false also when it was discarded) */
        void completed(boolean success);
    }

    /** What {@link #retire} found for the completed request. */
    record Retired(long userWrId, WcOpcode opcode, CompletableFuture<WorkCompletion> future) {}

    final ReentrantLock lock = new ReentrantLock();
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
    private String closedReason;

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
    long claim(String verb, String qp, long wrId, WcOpcode op, ScatterGatherList sgl, MemoryRegion extra,
               CompletableFuture<WorkCompletion> future, Outcome action) {
        if (closedReason != null) throw new IllegalStateException(qp + ": " + closedReason);
        if (tail - head == depth) throw new QueueFullException(verb, qp, queue, depth);
        int slot = (int) (tail % depth);
        MemoryRegion[] held = holds[slot];
        int n = 0;
        try {
            for (int i = 0; i < sgl.count(); i++) {
                MemoryRegion mr = sgl.region(i);
                if (mr != null) {
                    mr.resource().addPin();
                    held[n++] = mr;
                }
            }
            if (extra != null) {
                extra.resource().addPin();
                held[n++] = extra;
            }
        } catch (RuntimeException e) {
            release(held, n);
            throw e;
        }
        holdCount[slot] = n;
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

    /**
     * Retires every request up to {@code id}; returns what the completed one was, or null if {@code id} is not
     * outstanding (a completion left over from before a reset or destroy).
     */
    Retired retire(long id, boolean success) {
        long seq = id & ~RECEIVE_BIT;
        Retired done;
        lock.lock();
        try {
            if (seq < head || seq >= tail) return null;
            for (long s = head; s < seq; s++) { // unsignaled predecessors: they succeeded before this one
                int slot = (int) (s % depth);
                if (outcome[slot] != null) outcome[slot].completed(true);
                clear(slot);
            }
            int slot = (int) (seq % depth);
            @SuppressWarnings("unchecked")
            var future = (CompletableFuture<WorkCompletion>) futures[slot];
            done = new Retired(userWrId[slot], opcode[slot], future);
            if (outcome[slot] != null) outcome[slot].completed(success);
            clear(slot);
            head = seq + 1;
        } finally {
            lock.unlock();
        }
        return done;
    }

    /**
     * Drops every outstanding request: after a reset (the NIC discards them without completions) or a destroy
     * (the NIC no longer touches their memory). Their regions are released and their futures failed.
     *
     * @param permanently whether the queue accepts no more requests
     */
    void discardAll(String reason, boolean permanently) {
        lock.lock();
        try {
            for (long s = head; s < tail; s++) {
                int slot = (int) (s % depth);
                CompletableFuture<?> f = futures[slot];
                if (f != null) f.completeExceptionally(new IllegalStateException(reason));
                if (outcome[slot] != null) outcome[slot].completed(false);
                clear(slot);
            }
            head = tail;
            if (permanently) closedReason = reason;
        } finally {
            lock.unlock();
        }
    }

    int outstanding() {
        lock.lock();
        try {
            return (int) (tail - head);
        } finally {
            lock.unlock();
        }
    }

    static boolean isReceive(long id) {
        return (id & RECEIVE_BIT) != 0;
    }

    private void clear(int slot) {
        release(holds[slot], holdCount[slot]);
        holdCount[slot] = 0;
        futures[slot] = null;
        outcome[slot] = null;
        opcode[slot] = null;
    }

    private static void release(MemoryRegion[] held, int n) {
        for (int i = 0; i < n; i++) {
            held[i].resource().removePin();
            held[i] = null;
        }
    }
}
