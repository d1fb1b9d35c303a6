package io.mooring.regcache;

import java.util.List;
import java.util.function.Function;

/**
 * {@link EvictionPolicy#LEAST_RECENTLY_USED}: the release that takes the unused regions past a bound evicts, on its
 * own thread, those released longest ago (by the cache's miss count at their release) until the bounds hold.
 */
final class LruEviction implements Eviction {
    private final RegistrationCache cache;
    private final RegionCounts counts;
    private final long maxBytes;
    private final long maxCount;
    private final Function<RegionIndex, List<CachedRegion>> oldestFirst;

    LruEviction(RegistrationCache cache, RegionCounts counts, long maxBytes, long maxCount) {
        this.cache = cache;
        this.counts = counts;
        this.maxBytes = maxBytes;
        this.maxCount = maxCount;
        this.oldestFirst = index -> index.retireLeastRecentlyUsed(maxCount, maxBytes);
    }

    @Override
    public void added(CachedRegion r) {}

    @Override
    public void unused(CachedRegion r) {
        // Unused regions are a subset of the index: while all of it fits the bounds, no counter need be summed.
        RegionIndex all = cache.index();
        if ((all.size() > maxCount || all.bytes() > maxBytes)
                && (counts.unusedCount() > maxCount || counts.unusedBytes() > maxBytes)) {
            cache.evict(oldestFirst);
        }
    }

    @Override
    public void left(CachedRegion r) {}

    @Override
    public void settle() {} // evictions happen in the release that exceeds a bound

    @Override
    public void close() {}
}
