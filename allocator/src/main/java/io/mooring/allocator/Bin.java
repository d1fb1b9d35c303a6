package io.mooring.allocator;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The slabs of one small class in one shard. Allocation takes the lowest free region of the first slab with
 * free regions (keeping slabs full and letting empty ones go); a slab that becomes empty returns its pages to
 * its chunk unless it is the only one left.
 *
 * <p>In front of the slabs, a <em>depot</em> of up to {@value #DEPOT_BATCHES} batches that thread caches flushed,
 * each given whole to the next refill (Bonwick's magazine depot): when one thread frees what another allocates — a
 * hand-off's consumer, whose cache overflows with the producer's regions, and the producer, whose cache runs dry —
 * a batch moves from one cache to the other with two array copies under one lock, instead of every region's bit set
 * and cleared in its slab (and slabs emptied and cut again as it drains and fills). A purge or the arena's close
 * drains the depot into the slabs ({@link #trim}), so that wholly free slabs and chunks can go; while the arena
 * closes, flushes bypass it.
 */
final class Bin {
    static final int DEPOT_BATCHES = 4;
    final int classIndex;
    private final ReentrantLock lock = new ReentrantLock();
    private Slab head;       // slabs with free regions; guarded by lock
    private int slabs;       // guarded by lock
    private long allocations; // regions handed to callers directly (not through a thread cache)
    private long frees;       // regions freed directly
    // The depot (see the class comment), guarded by lock: batches 0 .. depotBatches - 1, each made once at its first use.
    private final long[][] depotAddresses = new long[DEPOT_BATCHES][];
    private final Object[][] depotSlabs = new Object[DEPOT_BATCHES][]; // Slabs; Object[] for plain copies
    private final int[] depotCounts = new int[DEPOT_BATCHES];
    private int depotBatches;

    Bin(int classIndex) {
        this.classIndex = classIndex;
    }

    /** Takes one region; {@code make} turns its slab and address into the block (under the lock, cheaply). */
    Block allocate(Shard shard, BlockFactory make) {
        lock.lock();
        try {
            Slab s = head;
            if (s == null && depotBatches > 0) { // a region from the depot before memory is grown
                int d = depotBatches - 1;
                int i = --depotCounts[d];
                if (i == 0) depotBatches--;
                allocations++;
                return make.block((Slab) depotSlabs[d][i], depotAddresses[d][i]);
            }
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
     * Moves regions into a thread cache's empty arrays (from index 0) and returns how many (at least one): the depot's
     * batches that fit in {@code room}, else half of it and one more from the slabs. A new slab is cut only for the
     * first: memory is not grown just to fill a cache.
     */
    int refill(Shard shard, long[] addresses, Object[] owners, int room) {
        lock.lock();
        try {
            int taken = 0;
            while (depotBatches > 0 && taken + depotCounts[depotBatches - 1] <= room) {
                int d = --depotBatches;
                System.arraycopy(depotAddresses[d], 0, addresses, taken, depotCounts[d]);
                System.arraycopy(depotSlabs[d], 0, owners, taken, depotCounts[d]);
                taken += depotCounts[d];
            }
            if (taken > 0) return taken;
            int n = room / 2 + 1;
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

    /**
     * Frees the regions {@code from .. to - 1} of a thread cache's arrays (a flush) in one locked step: as one batch
     * into the depot if it has room, else into their slabs.
     */
    void flush(Shard shard, long[] addresses, Object[] owners, int from, int to) {
        Slab[] emptied = null;
        int released = 0;
        lock.lock();
        try {
            if (depotBatches < DEPOT_BATCHES && to - from <= ThreadCache.MAX_SLOTS && !shard.chunks.isClosing()) {
                int d = depotBatches++;
                if (depotAddresses[d] == null) {
                    depotAddresses[d] = new long[ThreadCache.MAX_SLOTS];
                    depotSlabs[d] = new Object[ThreadCache.MAX_SLOTS];
                }
                System.arraycopy(addresses, from, depotAddresses[d], 0, to - from);
                System.arraycopy(owners, from, depotSlabs[d], 0, to - from);
                depotCounts[d] = to - from;
                return;
            }
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

    /** Drains the depot into the slabs, and lets go of the slab kept for reuse if it is wholly free (purging, closing). */
    void trim(Shard shard) {
        List<Slab> emptied = new ArrayList<>(0);
        lock.lock();
        try {
            for (; depotBatches > 0; depotBatches--) {
                int d = depotBatches - 1;
                for (int i = 0; i < depotCounts[d]; i++) {
                    Slab e = freeRegion(shard, (Slab) depotSlabs[d][i], depotAddresses[d][i]);
                    if (e != null) emptied.add(e);
                }
                Arrays.fill(depotSlabs[d], null); // no released slab kept reachable
            }
            if (slabs == 1 && head != null && head.free() == head.regions) {
                emptied.add(head);
                unlink(head);
                slabs--;
            }
        } finally {
            lock.unlock();
        }
        emptied.forEach(shard::freeSlab);
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
        return Locks.read(lock, () -> allocations);
    }

    /** Regions freed directly, for stats. */
    long frees() {
        return Locks.read(lock, () -> frees);
    }

    /** Slabs holding regions of this class now, for stats. */
    long slabs() {
        return Locks.read(lock, () -> slabs);
    }
}
