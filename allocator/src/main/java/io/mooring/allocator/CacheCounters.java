package io.mooring.allocator;

/**
 * What the caches of ended threads counted, kept by the {@link ThreadBinding}: without it their allocations would
 * vanish from the stats while frees made elsewhere remained, and live counts would go negative.
 */
final class CacheCounters {
    final long[] allocations = new long[ThreadCache.CLASSES];
    final long[] frees = new long[ThreadCache.CLASSES];
    long misses;

    /** Adds a cache's final counts (its owner has ended: its writes are visible). */
    void add(ThreadCache cache) {
        for (int c = 0; c < ThreadCache.CLASSES; c++) {
            allocations[c] += cache.allocations(c);
            frees[c] += cache.frees(c);
        }
        misses += cache.misses();
    }
}
