package io.mooring.verbs;

import java.util.Arrays;
import java.util.concurrent.CompletableFuture;

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

    private String name; // for messages; set once the queue's resource is named
    private final int depth;
    private final long[] userWrId;
    private final MemoryRegion[][] holds;
    private final int[] holdCount;
    private final CompletableFuture<?>[] futures;
    private final int[] generation;
    private final boolean[] used;
    private final int[] free; // a stack of free slots; guarded by lock
    private int freeCount;
    private final Table table;
    private final int index;

    /** A queue of {@code depth} slots, entered in {@code table} until it is discarded permanently. */
    SrqInFlight(String name, int depth, Table table) {
        this.name = name;
        this.depth = depth;
        this.userWrId = new long[depth];
        this.holds = new MemoryRegion[depth][MAX_HOLDS];
        this.holdCount = new int[depth];
        this.futures = new CompletableFuture<?>[depth];
        this.generation = new int[depth];
        this.used = new boolean[depth];
        this.free = new int[depth];
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
        if (closedReason != null) throw new IllegalStateException(name + ": " + closedReason);
        if (freeCount == 0) throw new QueueFullException("ibv_post_srq_recv", name, "shared receive", depth);
        int slot = free[freeCount - 1];
        holdCount[slot] = hold(sgl, null, holds[slot]);
        freeCount--;
        used[slot] = true;
        userWrId[slot] = wrId;
        futures[slot] = future;
        return RECEIVE_BIT | SHARED_BIT | (long) index << INDEX_SHIFT | (long) generation[slot] << SLOT_BITS | slot;
    }

    /** Gives back the slot of {@code id}, just claimed, when the provider refused the post (caller holds the lock). */
    void unclaim(long id) {
        clear((int) (id & SLOT_MASK));
    }

    @Override
    boolean retireLocked(long id, boolean success, Retired into) {
        int slot = (int) (id & SLOT_MASK);
        int gen = (int) (id >>> SLOT_BITS) & GENERATION_MASK;
        if (slot >= depth || !used[slot] || generation[slot] != gen) return false;
        into.set(userWrId[slot], WcOpcode.RECV, futures[slot]);
        clear(slot);
        return true;
    }

    @Override
    void discardAllLocked(String reason) {
        for (int slot = 0; slot < depth; slot++) {
            if (!used[slot]) continue;
            fail(futures[slot], reason);
            clear(slot);
        }
    }

    @Override
    int outstandingLocked() {
        return depth - freeCount;
    }

    @Override
    void closed() {
        table.remove(index); // a leftover completion naming this index finds no queue
    }

    private void clear(int slot) {
        release(holds[slot], holdCount[slot]);
        holdCount[slot] = 0;
        futures[slot] = null;
        used[slot] = false;
        generation[slot] = (generation[slot] + 1) & GENERATION_MASK;
        free[freeCount++] = slot;
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
