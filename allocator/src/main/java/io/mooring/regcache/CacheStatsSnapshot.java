package io.mooring.regcache;

/** The {@link RegistrationCacheStats} a cache takes of its {@link RegionCounts}. */
record CacheStatsSnapshot(long hits, long misses, long merges, long evictions, long invalidations, long leaks,
                          long cachedCount, long cachedBytes, long inUseCount, long inUseBytes)
        implements RegistrationCacheStats {}
