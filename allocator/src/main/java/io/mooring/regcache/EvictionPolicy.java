package io.mooring.regcache;

/** Which unused regions a {@link RegistrationCache} keeps registered when they exceed its bounds. */
public enum EvictionPolicy {
    /**
     * Keeps the regions used most often, recently (Caffeine's W-TinyLFU): a sequential scan through buffers used
     * once (a compaction, a backup) does not push out the hot ones. Regions are evicted on a thread of the cache's
     * own, shortly after the bounds were exceeded. The default.
     */
    FREQUENCY {
        @Override
        Eviction create(RegistrationCache cache, RegionCounts counts, long maxBytes, long maxCount) {
            return new FrequencyEviction(cache, maxBytes, maxCount);
        }
    },
    /**
     * Deregisters the regions released longest ago first, on the thread whose release exceeded a bound (UCX's
     * rcache does the same). A scan larger than the cache evicts every hot region.
     */
    LEAST_RECENTLY_USED {
        @Override
        Eviction create(RegistrationCache cache, RegionCounts counts, long maxBytes, long maxCount) {
            return new LruEviction(cache, counts, maxBytes, maxCount);
        }
    };

    abstract Eviction create(RegistrationCache cache, RegionCounts counts, long maxBytes, long maxCount);
}
