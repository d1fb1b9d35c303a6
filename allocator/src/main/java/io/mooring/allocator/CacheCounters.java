package io.mooring.allocator;

/**
 * Thread-cache counters summed over caches: for a stats snapshot, and for the arena to keep what the caches of dead
 * threads counted once they are swept (without it their allocations would vanish from the stats while frees made
 * elsewhere remained, and live counts would go negative).
 */
final class CacheCounters {
    final long[] allocations = new long[ThreadCache.CLASSES];
    final long[] frees = new long[ThreadCache.CLASSES];
    long hits;
    long misses;

    void add(ThreadCache cache) {
        add(cache.allocations, cache.frees, cache.hits, cache.misses);
    }

    void add(CacheCounters other) {
        add(other.allocations, other.frees, other.hits, other.misses);
    }

    private void add(long[] allocs, long[] freed, long hit, long missed) {
        for (int c = 0; c < ThreadCache.CLASSES; c++) {
            allocations[c] += allocs[c];
            frees[c] += freed[c];
        }
        hits += hit;
        misses += missed;
    }
}
