/** Sessions between peers and timeout-bounded leases of registered blocks, revoked before the memory is reused. */
module io.mooring.lease {
    requires transitive io.mooring.allocator;
    requires transitive com.github.benmanes.caffeine; // LeaseCache.stats() is a Caffeine CacheStats

    exports io.mooring.lease;
}
