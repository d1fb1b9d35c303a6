package io.mooring.allocator;

import java.util.List;

/**
 * A snapshot of an arena's counters, taken without stopping allocation: totals may lag by in-flight calls, and live
 * counts are never higher than what was live at some moment during the snapshot.
 *
 * @param classes          per small size class
 * @param largeAllocations page-run blocks handed out
 * @param largeFrees       page-run blocks given back
 * @param hugeAllocations  blocks that got a chunk of their own
 * @param hugeFrees        such blocks given back
 * @param activeBytes      bytes of live blocks, counted at their class sizes
 * @param registeredBytes  bytes of all registered chunks
 * @param retainedBytes    bytes of wholly free chunks kept registered for reuse
 * @param dirtyBytes       free bytes inside chunks that still hold live blocks
 * @param chunks           registered chunks (huge ones included)
 * @param registrations    {@code ibv_reg_mr} calls made so far
 * @param deregistrations  {@code ibv_dereg_mr} calls made so far
 * @param quarantined      blocks closed by another thread, waiting to be freed by their owner or the collector
 * @param cacheHits        allocations served by a thread cache without a lock
 * @param cacheMisses      allocations that refilled a thread cache from its shard
 * @param cachedRegions    free small regions and page runs held in thread caches now
 */
public record ArenaStats(List<ClassStats> classes, long largeAllocations, long largeFrees, long hugeAllocations,
                         long hugeFrees, long activeBytes, long registeredBytes, long retainedBytes, long dirtyBytes,
                         long chunks, long registrations, long deregistrations, long quarantined, long cacheHits,
                         long cacheMisses, long cachedRegions) {

    /**
     * One small size class.
     *
     * @param size        its region size
     * @param allocations regions handed out
     * @param frees       regions given back
     * @param slabs       slabs currently holding its regions
     */
    public record ClassStats(long size, long allocations, long frees, long slabs) {
        /** Regions in use now. */
        public long live() {
            return allocations - frees;
        }
    }

    public ArenaStats {
        classes = List.copyOf(classes);
    }

    /** Blocks in use now, of every kind. */
    public long liveBlocks() {
        return classes.stream().mapToLong(ClassStats::live).sum() + largeAllocations - largeFrees + hugeAllocations
                - hugeFrees;
    }

    /** Registered bytes per byte of live blocks: the memory overhead (1.0 is perfect). */
    public double overhead() {
        return activeBytes == 0 ? 0 : (double) registeredBytes / activeBytes;
    }
}
