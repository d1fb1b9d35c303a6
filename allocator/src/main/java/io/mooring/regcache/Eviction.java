package io.mooring.regcache;

/**
 * How a {@link RegistrationCache} chooses which unused regions to deregister once they exceed its bounds: the one
 * thing its two {@link EvictionPolicy policies} do differently. The cache calls it outside its lock, never on a hit.
 */
interface Eviction extends AutoCloseable {
    /** A miss registered {@code r} and put it in the index. */
    void added(CachedRegion r);

    /** The last pin of {@code r} was released: it is unused, and subject to eviction, from now on. */
    void unused(CachedRegion r);

    /** {@code r} was retired (evicted, invalidated, merged, closed): the policy forgets it. */
    void left(CachedRegion r);

    /** Waits until the evictions already chosen are done (tests and benchmarks that read the counters after). */
    void settle();

    /** The cache closed: no region is chosen any more, and a thread the policy evicts on has finished. */
    @Override
    void close();
}
