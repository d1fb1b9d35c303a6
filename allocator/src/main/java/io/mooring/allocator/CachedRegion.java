package io.mooring.allocator;

import io.mooring.verbs.MemoryRegion;

/**
 * One memory region a {@link RegistrationCache} registered: a page-aligned range with some rights, shared by
 * every {@link Registration} it serves. The mutable fields are guarded by the cache's lock.
 */
final class CachedRegion {
    final long start;
    final long length;
    /** The {@code IBV_ACCESS_*} mask it was registered with. */
    final int access;
    final MemoryRegion region;
    // Captured at registration: they stay readable while a holder keeps the region alive after its handle closed.
    final int lkey;
    final int rkey;
    /** Its weight in the unused LRU: Caffeine weights are ints, so pages rather than bytes (64-bit lengths). */
    final int pages;

    /** Open registrations on it; 0 means it sits in the unused LRU (if still cached). */
    int users;
    /** Whether the cache may still hand it out; false once evicted, invalidated or the cache closed. */
    boolean cached = true;

    CachedRegion(MemoryRegion region, int access, long pageSize) {
        this.start = region.address();
        this.length = region.length();
        this.access = access;
        this.region = region;
        this.lkey = region.lkey();
        this.rkey = region.rkey();
        this.pages = (int) Math.min(Integer.MAX_VALUE, length / pageSize);
    }

    long end() {
        return start + length;
    }

    /** Whether it can serve {@code [from, to)} with at least {@code rights}. */
    boolean covers(long from, long to, int rights) {
        return start <= from && to <= end() && (access & rights) == rights;
    }

    @Override
    public String toString() {
        return region + " [0x" + Long.toHexString(start) + ", +" + length + ")";
    }
}
