package io.mooring.regcache;

import java.util.Comparator;

/**
 * {@link EvictionPolicy#LEAST_RECENTLY_USED}: the release that takes the unused regions past a bound evicts, on its
 * own thread, those released longest ago (by the cache's miss count at their release) until the bounds hold.
 */
final class LruEviction implements Eviction {
    private static final Comparator<CachedRegion> OLDEST_FIRST = Comparator.comparingLong(CachedRegion::lastUsed);

    private final RegistrationCache cache;

    LruEviction(RegistrationCache cache) {
        this.cache = cache;
    }

    @Override
    public void added(CachedRegion r) {}

    @Override
    public void unused(CachedRegion r) {
        if (cache.overBounds()) cache.trim(OLDEST_FIRST);
    }

    @Override
    public void left(CachedRegion r) {}

    @Override
    public void settle() {} // evictions happen in the release that exceeds a bound

    @Override
    public void close() {}
}
