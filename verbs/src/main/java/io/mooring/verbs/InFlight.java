package io.mooring.verbs;

import io.mooring.verbs.values.WcOpcode;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;

/**
 * The outstanding work requests of one queue (send or receive) of one QP, in post order: a ring of
 * {@code depth} preallocated slots, so posting allocates nothing and posting past the depth is refused.
 *
 * <p>A request's Mooring id is its sequence number (with {@link #RECEIVE_BIT} for the receive queue). A
 * completion for sequence {@code s} retires every slot up to {@code s}: on a reliable connection requests
 * complete in order, and unsignaled requests before a signaled one succeeded with it.
 *
 * <p>Two sides, no lock shared: posters claim slots at {@code tail} under {@link #lock}; the one poller of the
 * queue's CQ retires them from {@code head}. Each slot's state word says whose it is — FREE (the posters'), the
 * sequence posted in it (the poller's), RETIRING (being emptied) — and changes hands once each way: a release store
 * after the poster filled it, a compare-and-set by whoever retires it, a release store once emptied. A discard
 * (reset, destroy) retires by the same compare-and-set, so it and the poller never both retire a slot.
 */
final class InFlight extends RequestSlots {
    /** What to do once a request retires (a window bind updates the window's key and binding). */
    interface Outcome {
        /** @param success whether the request succeeded (false also when it was discarded) */
        void completed(boolean success);
    }

    private static final long FREE = -1;
    private static final long RETIRING = -2;
    private static final VarHandle STATE = MethodHandles.arrayElementVarHandle(long[].class);
    private static final VarHandle HEAD;

    static {
        try {
            HEAD = MethodHandles.lookup().findVarHandle(InFlight.class, "head", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final String queue;
    private final boolean receive;
    private final int depth;
    private final long[] state; // per slot: FREE, RETIRING or the sequence posted in it
    private final long[] userWrId;
    private final WcOpcode[] opcode;
    private final MemoryRegion[][] holds;
    private final int[] holdCount;
    private final CompletableFuture<?>[] futures;
    private final Outcome[] outcome;
    private long tail; // next sequence to post; guarded by lock
    @SuppressWarnings("unused") // through HEAD: written by the poller only, read by outstanding()
    private long head; // the sequence after the last one the poller retired
    private volatile long discardedBelow; // every sequence below was discarded (the poller skips them)

    InFlight(String queue, boolean receive, int depth) {
        this.queue = queue;
        this.receive = receive;
        this.depth = depth;
        this.state = new long[depth];
        Arrays.fill(state, FREE);
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
        int slot = nextSlot(verb, qp);
        holdCount[slot] = hold(sgl, extra, holds[slot]);
        userWrId[slot] = wrId;
        opcode[slot] = op;
        futures[slot] = future;
        outcome[slot] = action;
        long seq = tail++;
        STATE.setRelease(state, slot, seq); // before the provider's post: its completion may be polled at once
        return receive ? seq | RECEIVE_BIT : seq;
    }

    /**
     * The slot the next {@link #claim} takes (caller holds {@link #lock}); whatever its request left there is the
     * caller's to reuse, since the slot is free.
     *
     * @throws QueueFullException if {@code depth} requests are outstanding
     */
    int nextSlot(String verb, Object qp) {
        // qp is named only when refused: building its name on every post would allocate
        if (closedReason != null) throw new IllegalStateException(qp + ": " + closedReason);
        int slot = (int) (tail % depth);
        // the slot of sequence tail - depth: free once that one retired, so not free means depth are outstanding
        if ((long) STATE.getAcquire(state, slot) != FREE) throw new QueueFullException(verb, qp.toString(), queue, depth);
        return slot;
    }

    /** Gives back the slot just claimed when the provider refused the post (caller holds {@link #lock}). */
    void unclaim() {
        int slot = (int) (--tail % depth);
        STATE.setRelease(state, slot, RETIRING); // no completion names a refused post: the poller never races here
        empty(slot, false);
    }

    @Override
    boolean retire(long id, boolean success, Retired into) {
        long seq = id & ~RECEIVE_BIT; // a shared receive queue's id (SHARED_BIT) is never in [from, from + depth)
        long from = Math.max((long) HEAD.getOpaque(this), discardedBelow);
        if (seq < from || seq - from >= depth) return false;
        for (long s = from; s < seq; s++) { // unsignaled predecessors: they succeeded before this one
            if (take(s)) empty((int) (s % depth), true);
        }
        HEAD.setRelease(this, seq + 1);
        if (!take(seq)) return false; // discarded by a reset or destroy meanwhile
        int slot = (int) (seq % depth);
        into.set(userWrId[slot], opcode[slot], futures[slot]);
        empty(slot, success);
        return true;
    }

    @Override
    void discardAllLocked(String reason) {
        for (int slot = 0; slot < depth; slot++) {
            long seq = (long) STATE.getAcquire(state, slot);
            if (seq < 0 || !take(seq)) continue; // free, or the poller is retiring it
            fail(futures[slot], reason);
            empty(slot, false);
        }
        discardedBelow = tail;
    }

    /**
     * Fails the futures of the outstanding requests but keeps the requests (caller holds {@link #lock}): the NIC may
     * still work on them, so their regions stay pinned until a poll, reset or destroy retires them.
     */
    void failFuturesLocked(String reason) {
        for (int slot = 0; slot < depth; slot++) {
            if ((long) STATE.getAcquire(state, slot) >= 0) fail(futures[slot], reason);
        }
    }

    @Override
    int outstandingLocked() {
        return (int) Math.max(0, tail - Math.max((long) HEAD.getAcquire(this), discardedBelow));
    }

    /** Takes the slot of sequence {@code seq} for retiring, if it still holds that request. */
    private boolean take(long seq) {
        return STATE.compareAndSet(state, (int) (seq % depth), seq, RETIRING);
    }

    /** Runs the slot's outcome, releases its regions and hands it back to the posters (caller took it). */
    private void empty(int slot, boolean success) {
        Outcome o = outcome[slot];
        if (o != null) o.completed(success);
        release(holds[slot], holdCount[slot]);
        holdCount[slot] = 0;
        futures[slot] = null;
        outcome[slot] = null;
        opcode[slot] = null;
        STATE.setRelease(state, slot, FREE);
    }
}
