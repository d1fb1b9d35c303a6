package io.mooring.regcache;

/**
 * A registration cache's counters ({@link RegistrationCache#stats()}), as one snapshot: an interface, so that it may
 * grow without breaking a caller, and a caller can fake one in a test.
 */
public interface RegistrationCacheStats {
    /** Acquisitions served by a region already registered. */
    long hits();

    /** Acquisitions that registered a new region. */
    long misses();

    /** Cached regions joined into a miss's larger region (UCX's merge) and retired. */
    long merges();

    /** Unused regions deregistered to stay within the cache's bounds. */
    long evictions();

    /** Regions retired by {@link RegistrationCache#invalidate}, in use or not. */
    long invalidations();

    /** Registrations released by the leak tracker because they became unreachable unclosed. */
    long leaks();

    /** Unused regions kept registered for reuse (what the count bound limits). */
    long cachedCount();

    /** Their bytes (what the byte bound limits). */
    long cachedBytes();

    /** Regions with at least one open {@link Registration}, retired ones included. */
    long inUseCount();

    /** Their bytes. */
    long inUseBytes();

    /** Hits per acquisition, 0 before the first. */
    default double hitRatio() {
        long all = hits() + misses();
        return all == 0 ? 0 : (double) hits() / all;
    }
}
