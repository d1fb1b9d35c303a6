package io.mooring.allocator;

import java.util.List;

/**
 * An arena's metrics (in the style of Netty's {@code PoolArenaMetric}), as one snapshot taken without stopping
 * allocation: totals may lag by calls in flight, and live counts are never higher than what was live at some moment
 * during the snapshot — which a STRICT close relies on. Get one from {@link RdmaArena#stats()}.
 */
public interface ArenaStats {
    /** Per small size class, smallest first. */
    List<ClassStats> classes();

    /** Page-run blocks handed out. */
    long largeAllocations();

    /** Page-run blocks freed. */
    long largeFrees();

    /** Blocks that got a chunk of their own. */
    long hugeAllocations();

    /** Such blocks freed. */
    long hugeFrees();

    /** Bytes of live blocks, counted at their class sizes. */
    long activeBytes();

    /** Bytes of all registered chunks. */
    long registeredBytes();

    /** Bytes of wholly free chunks kept registered for reuse. */
    long retainedBytes();

    /** Free bytes inside chunks that still hold live blocks. */
    long dirtyBytes();

    /** Registered chunks (huge ones included). */
    long chunks();

    /** {@code ibv_reg_mr} calls made so far. */
    long registrations();

    /** {@code ibv_dereg_mr} calls made so far. */
    long deregistrations();

    /**
     * Blocks closed by another thread than their owner (mt frees) and not collected yet: closed, but their memory
     * not reusable until their owner or the collector collects them (see {@link Block}).
     */
    long uncollectedFrees();

    /**
     * Blocks closed while pinned whose memory waits for their last pin's release (see {@link Block#pin}); they are
     * counted in {@link #liveBlocks()} too, since their memory is still in use.
     */
    long closedPinnedBlocks();

    /** Allocations served by a thread cache without a lock. */
    long cacheHits();

    /** Allocations that refilled a thread cache from its shard. */
    long cacheMisses();

    /** Free small regions and page runs held in thread caches now. */
    long cachedRegions();

    /**
     * Blocks in use now, of every kind. Never below zero: frees read after the allocations may count blocks allocated
     * and freed during the snapshot on two threads (a hand-off), and a count below zero is no bound on anything.
     */
    default long liveBlocks() {
        long live = largeAllocations() - largeFrees() + hugeAllocations() - hugeFrees();
        for (ClassStats c : classes()) live += c.allocations() - c.frees();
        return Math.max(0, live);
    }

    /** Registered bytes per byte of live blocks: the memory overhead (1.0 is perfect). */
    default double overhead() {
        return activeBytes() == 0 ? 0 : (double) registeredBytes() / activeBytes();
    }

    /** The metrics of one small size class. */
    interface ClassStats {
        /** Its region size. */
        long size();

        /** Regions handed out. */
        long allocations();

        /** Regions freed. */
        long frees();

        /** Slabs currently holding its regions. */
        long slabs();

        /**
         * Regions in use now; never below zero (see {@link ArenaStats#liveBlocks()}). A lower bound per class only
         * once the arena is quiet: a region one cache counts under this class may be freed under another's count.
         */
        default long live() {
            return Math.max(0, allocations() - frees());
        }
    }
}
