package io.mooring.regcache;

/**
 * A registration cache's counters ({@link RegistrationCache#stats()}).
 *
 * @param hits          acquisitions served by a region already registered
 * @param misses        acquisitions that registered a new region
 * @param merges        cached regions joined into a miss's larger region (UCX's merge) and retired
 * @param evictions     unused regions deregistered to stay within the cache's bounds
 * @param invalidations regions retired by {@link RegistrationCache#invalidate}, in use or not
 * @param leaks         registrations released by the leak tracker because they became unreachable unclosed
 * @param cachedCount   unused regions kept registered for reuse (what the count bound limits)
 * @param cachedBytes   their bytes (what the byte bound limits)
 * @param inUseCount    regions with at least one open {@link Registration}, retired ones included
 * @param inUseBytes    their bytes
 */
public record RegistrationCacheStats(long hits, long misses, long merges, long evictions, long invalidations,
                                     long leaks, long cachedCount, long cachedBytes, long inUseCount,
                                     long inUseBytes) {
    /** Hits per acquisition, 0 before the first. */
    public double hitRatio() {
        long all = hits + misses;
        return all == 0 ? 0 : (double) hits / all;
    }
}
