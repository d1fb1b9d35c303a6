package io.mooring.verbs;

import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.values.WcOpcode;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The outstanding receives of a shared receive queue. Unlike a QP's queue they complete out of order — each QP on
 * the queue takes the next posted receive when its own SEND arrives, and its completions go to its own CQ — so a
 * completion retires exactly its own slot: slots come from a free list, and a request's id names its slot and the
 * slot's generation, so a completion left over from a discarded use of the slot retires nothing.
 *
 * <p>The id also names the queue (its index in its context's {@link Table}), so a completion finds its slot
 * without its QP: a QP destroyed before its receive completion was polled leaves nothing posted behind.
 */
final class SrqInFlight extends RequestSlots {
    // id = RECEIVE_BIT | SHARED_BIT | index (16 bits) | generation (21 bits) | slot (24 bits)
    private static final int SLOT_BITS = 24;
    private static final int GENERATION_BITS = 21;
    private static final int INDEX_SHIFT = SLOT_BITS + GENERATION_BITS;
    private static final long SLOT_MASK = (1L << SLOT_BITS) - 1;
    private static final int GENERATION_MASK = (1 << GENERATION_BITS) - 1;
    private static final int INDEX_MASK = (1 << 16) - 1;
    /** Receives per queue: the slot index fits its 24 bits of the id. */
    static final int MAX_DEPTH = 1 << SLOT_BITS;
    // a slot's state word: generation << 2 | phase
    private static final int FREE = 0;
    private static final int POSTED = 1;
    private static final int RETIRING = 2;
    private static final VarHandle STATE = MethodHandles.arrayElementVarHandle(int[].class);
    private static final long NO_SLOT = 0xFFFF_FFFFL; // low half of an empty returned list: slot -1, count 0

    private String name; // for messages; set once the queue's resource is named
    private final int depth;
    private final int[] state;
    private final long[] userWrId;
    private final RegionPins pins;
    private final CompletableFuture<?>[] futures;
    private final int[] free; // the posters' stack of free slots; guarded by lock
    private int freeCount;
    /**
     * Slots retired by pollers, not yet collected by a poster: a stack linked through {@link #next}, its top slot in
     * the low half, its length in the high half. Pollers of several CQs push (compare-and-set); a poster takes the
     * whole stack at once (mimalloc's thread-free list), so no poller ever waits for a lock or for another poller.
     */
    private final AtomicLong returned = new AtomicLong(NO_SLOT);
    private final int[] next;
    /** Tests only, else null: runs inside a poller's push, between its read of the top and its compare-and-set. */
    Runnable insidePush;
    private final Table table;
    private final int index;

    /** A queue of {@code depth} slots, entered in {@code table} until it is discarded permanently. */
    SrqInFlight(String name, int depth, Table table) {
        this.name = name;
        this.depth = depth;
        this.state = new int[depth];
        this.userWrId = new long[depth];
        this.pins = new RegionPins(depth);
        this.futures = new CompletableFuture<?>[depth];
        this.free = new int[depth];
        this.next = new int[depth];
        for (int i = 0; i < depth; i++) free[i] = depth - 1 - i;
        this.freeCount = depth;
        this.table = table;
        this.index = table.add(this);
    }

    void name(String name) {
        this.name = name;
    }

    int depth() {
        return depth;
    }

    /**
     * Claims a free slot (caller holds {@link #lock}) and pins the regions of {@code sgl} until the receive retires.
     *
     * @throws QueueFullException if {@code depth} receives are outstanding
     */
    long claim(long wrId, ScatterGatherList sgl, CompletableFuture<WorkCompletion> future) {
        if (closedReason != null) throw new ResourceClosedException(name + ": " + closedReason);
        if (freeCount == 0) collectReturned();
        if (freeCount == 0) throw new QueueFullException("ibv_post_srq_recv", name, "shared receive", depth);
        int slot = free[freeCount - 1];
        pins.pin(slot, sgl, null);
        freeCount--;
        userWrId[slot] = wrId;
        futures[slot] = future;
        int gen = (int) STATE.getAcquire(state, slot) >>> 2;
        STATE.setRelease(state, slot, gen << 2 | POSTED); // before the provider's post: it may complete at once
        return RECEIVE_BIT | SHARED_BIT | (long) index << INDEX_SHIFT | (long) gen << SLOT_BITS | slot;
    }

    /** Gives back the slot of {@code id}, just claimed, when the provider refused the post (caller holds the lock). */
    void unclaim(long id) {
        int slot = (int) (id & SLOT_MASK);
        empty(slot);
        free[freeCount++] = slot;
    }

    @Override
    boolean retire(long id, boolean success, Retired into) {
        int slot = (int) (id & SLOT_MASK);
        int gen = (int) (id >>> SLOT_BITS) & GENERATION_MASK;
        if (slot >= depth || !STATE.compareAndSet(state, slot, gen << 2 | POSTED, gen << 2 | RETIRING)) return false;
        into.set(userWrId[slot], WcOpcode.RECV, futures[slot]);
        empty(slot);
        long top;
        do { // push onto the returned stack
            top = returned.get();
            next[slot] = (int) top;
            if (insidePush != null) insidePush.run();
        } while (!returned.compareAndSet(top, ((top >>> 32) + 1) << 32 | slot));
        return true;
    }

    @Override
    void discardAllLocked(RuntimeException why) {
        for (int slot = 0; slot < depth; slot++) {
            int s = (int) STATE.getAcquire(state, slot);
            if ((s & 3) != POSTED || !STATE.compareAndSet(state, slot, s, s - POSTED + RETIRING)) continue;
            fail(futures[slot], why);
            empty(slot);
            free[freeCount++] = slot;
        }
    }

    @Override
    int outstandingLocked() {
        return depth - freeCount - (int) (returned.get() >>> 32);
    }

    @Override
    void closed() {
        table.remove(index); // a leftover completion naming this index finds no queue
    }

    /** Releases the slot's regions and starts its next generation, free (caller took it or just claimed it). */
    private void empty(int slot) {
        pins.unpin(slot);
        futures[slot] = null;
        int gen = ((int) STATE.getAcquire(state, slot) >>> 2) + 1 & GENERATION_MASK;
        STATE.setRelease(state, slot, gen << 2 | FREE);
    }

    /** Moves every slot the pollers returned onto the posters' free stack (caller holds the lock). */
    private void collectReturned() {
        int slot = (int) returned.getAndSet(NO_SLOT);
        while (slot != -1) {
            free[freeCount++] = slot;
            slot = next[slot];
        }
    }

    /**
     * The shared receive queues of one device context by index, so that a completion of a shared receive finds its
     * queue from its id alone. Copied on write: queues come and go rarely, completions look them up all the time.
     */
    static final class Table {
        private volatile SrqInFlight[] queues = new SrqInFlight[4];

        private synchronized int add(SrqInFlight q) {
            SrqInFlight[] now = queues;
            for (int i = 0; i < now.length; i++) {
                if (now[i] == null) {
                    publish(now, i, q);
                    return i;
                }
            }
            if (now.length > INDEX_MASK) {
                throw new IllegalStateException(now.length + " shared receive queues are open on this context already");
            }
            publish(now, now.length, q);
            return now.length;
        }

        private synchronized void remove(int index) {
            publish(queues, index, null);
        }

        private void publish(SrqInFlight[] now, int index, SrqInFlight q) {
            SrqInFlight[] next = Arrays.copyOf(now, index < now.length ? now.length : Math.min(2 * now.length, INDEX_MASK + 1));
            next[index] = q;
            queues = next;
        }

        /** The queue a shared receive's {@code id} names, or null if it is gone. */
        SrqInFlight of(long id) {
            int index = (int) (id >>> INDEX_SHIFT) & INDEX_MASK;
            SrqInFlight[] now = queues;
            return index < now.length ? now[index] : null;
        }
    }
}
