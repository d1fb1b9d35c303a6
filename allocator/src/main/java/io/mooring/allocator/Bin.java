package io.mooring.allocator;

import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * The slabs of one small class in one shard. Allocation takes the lowest free region of the first slab with
 * free regions (keeping slabs full and letting empty ones go); a slab that becomes empty returns its pages to
 * its chunk unless it is the only one left.
 */
final class Bin {
    final int classIndex;
    private final ReentrantLock lock = new ReentrantLock();
    private Slab head;       // slabs with free regions; guarded by lock
    private int slabs;       // guarded by lock
    private long allocations; // regions handed to callers directly (not through a thread cache)
    private long frees;       // regions freed directly

    Bin(int classIndex) {
        this.classIndex = classIndex;
    }

    /** Takes one region; {@code make} turns its slab and address into the block (under the lock, cheaply). */
    Block allocate(Shard shard, BlockFactory make) {
        lock.lock();
        try {
            Slab s = head;
            if (s == null) {
                s = shard.newSlab(classIndex);
                slabs++;
                link(s);
            }
            long address = s.allocate();
            if (s.free() == 0) unlink(s);
            allocations++;
            return make.block(s, address);
        } finally {
            lock.unlock();
        }
    }

    /** Creates the block for a region just taken. */
    interface BlockFactory {
        Block block(Slab slab, long address);
    }

    /**
     * Moves up to {@code n} regions into a thread cache's arrays (from index 0); returns how many (at least
     * one). A new slab is cut only for the first: memory is not grown just to fill a cache.
     */
    int refill(Shard shard, long[] addresses, Object[] owners, int n) {
        lock.lock();
        try {
            for (int i = 0; i < n; i++) {
                Slab s = head;
                if (s == null) {
                    if (i > 0) return i;
                    s = shard.newSlab(classIndex);
                    slabs++;
                    link(s);
                }
                addresses[i] = s.allocate();
                owners[i] = s;
                if (s.free() == 0) unlink(s);
            }
            return n;
        } finally {
            lock.unlock();
        }
    }

    void free(Shard shard, Slab s, long address) {
        Slab emptied;
        lock.lock();
        try {
            frees++;
            emptied = freeRegion(shard, s, address);
        } finally {
            lock.unlock();
        }
        if (emptied != null) shard.freeSlab(emptied);
    }

    /** Frees the regions {@code from .. to - 1} of a thread cache's arrays (a flush) in one locked step. */
    void flush(Shard shard, long[] addresses, Object[] owners, int from, int to) {
        Slab[] emptied = null;
        int released = 0;
        lock.lock();
        try {
            for (int i = from; i < to; i++) {
                Slab e = freeRegion(shard, (Slab) owners[i], addresses[i]);
                if (e != null) {
                    if (emptied == null) emptied = new Slab[to - from];
                    emptied[released++] = e;
                }
            }
        } finally {
            lock.unlock();
        }
        for (int i = 0; i < released; i++) shard.freeSlab(emptied[i]);
    }

    /** Frees a region into its slab; returns the slab if it became empty and should go back to its chunk. */
    private Slab freeRegion(Shard shard, Slab s, long address) {
        s.free(address);
        if (!s.listed) link(s);
        if (s.free() == s.regions && (slabs > 1 || shard.chunks.isClosing())) {
            unlink(s);
            slabs--;
            return s;
        }
        return null;
    }

    /** Lets go of the slab kept for reuse if it is wholly free (purging, closing). */
    void trim(Shard shard) {
        Slab emptied = null;
        lock.lock();
        try {
            if (slabs == 1 && head != null && head.free() == head.regions) {
                emptied = head;
                unlink(emptied);
                slabs--;
            }
        } finally {
            lock.unlock();
        }
        if (emptied != null) shard.freeSlab(emptied);
    }

    private void link(Slab s) {
        s.next = head;
        s.prev = null;
        if (head != null) head.prev = s;
        head = s;
        s.listed = true;
    }

    private void unlink(Slab s) {
        if (s.prev != null) s.prev.next = s.next;
        else head = s.next;
        if (s.next != null) s.next.prev = s.prev;
        s.prev = s.next = null;
        s.listed = false;
    }

    /** Regions handed to callers directly (not through a thread cache), for stats. */
    long allocations() {
        return underLock(() -> allocations);
    }

    /** Regions freed directly, for stats. */
    long frees() {
        return underLock(() -> frees);
    }

    /** Slabs holding regions of this class now, for stats. */
    long slabs() {
        return underLock(() -> slabs);
    }

    private long underLock(LongSupplier counter) {
        lock.lock();
        try {
            return counter.getAsLong();
        } finally {
            lock.unlock();
        }
    }
}
