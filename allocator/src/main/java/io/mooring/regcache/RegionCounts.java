package io.mooring.regcache;

import java.util.concurrent.atomic.LongAdder;

/**
 * A registration cache's counters. Hits, leaks and the unused and live amounts change outside the cache's lock, on
 * hits and releases: striped, so threads do not contend on one counter. The other counts change only under the
 * cache's lock, which guards them.
 */
final class RegionCounts {
    final LongAdder hits = new LongAdder();
    final LongAdder leaks = new LongAdder();
    /** Unused regions in the index (what the bounds limit): a hit of one subtracts, its last release adds. */
    private final LongAdder unusedCount = new LongAdder();
    private final LongAdder unusedBytes = new LongAdder();
    /** Regions registered and not yet deregistered, in the index or retired in use (their last release subtracts). */
    private final LongAdder liveCount = new LongAdder();
    private final LongAdder liveBytes = new LongAdder();
    // Guarded by the cache's lock.
    long misses;
    long merges;
    long evictions;
    long invalidations;

    /** {@code r} became unused ({@code +1}) or is used, or gone, again ({@code -1}). */
    void unused(CachedRegion r, int sign) {
        unusedCount.add(sign);
        unusedBytes.add(sign * r.length());
    }

    /** {@code r} was registered ({@code +1}) or leaves for good ({@code -1}). */
    void live(CachedRegion r, int sign) {
        liveCount.add(sign);
        liveBytes.add(sign * r.length());
    }

    long unusedCount() {
        return unusedCount.sum();
    }

    long unusedBytes() {
        return unusedBytes.sum();
    }

    /** Regions with open registrations. */
    long inUse() {
        return liveCount.sum() - unusedCount.sum();
    }

    /** Under the cache's lock. */
    RegistrationCacheStats snapshot() {
        long count = unusedCount.sum();
        long bytes = unusedBytes.sum();
        return new CacheStatsSnapshot(hits.sum(), misses, merges, evictions, invalidations, leaks.sum(),
                count, bytes, liveCount.sum() - count, liveBytes.sum() - bytes);
    }
}
