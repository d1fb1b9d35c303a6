package io.mooring.allocator;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Policy;
import com.github.benmanes.caffeine.cache.RemovalCause;
import io.mooring.lifecycle.ClosePolicy;
import io.mooring.lifecycle.DestroyFailedException;
import io.mooring.lifecycle.Resource;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.Access;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.ProtectionDomain;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Registrations of memory the caller already has (buffers of its own, mapped files), cached so that using the
 * same memory again costs a lookup instead of an {@code ibv_reg_mr} (tens of microseconds).
 * <pre>{@code
 * var cache = RegistrationCache.builder(pd).maxCachedBytes(1L << 30).build();
 * try (Registration reg = cache.acquire(buffer)) {
 *     qp.post(WorkRequest.write(reg.region(), reg.offset(), len).remote(addr, rkey));
 * }
 * cache.invalidate(buffer);   // before the buffer's memory is freed
 * }</pre>
 *
 * <p>A request registers the whole pages around the segment (the kernel pins whole pages anyway), or is served
 * by a cached region that covers those pages with at least the requested rights. Regions in use are never
 * deregistered; unused ones wait in an LRU bounded by bytes and by count and are deregistered when evicted.
 *
 * <p>The caller owns the memory, so the cache cannot know when it is freed: call {@link #invalidate} before
 * freeing (or unmapping) it. A region still in use then is handed out no more and is deregistered when its last
 * registration closes.
 *
 * <p>In the lifecycle graph the cache is a child of its PD and every region a child of both, so closing the
 * cache (or the PD's tree) deregisters every region, each only after its last registration closed. Thread-safe:
 * one lock guards the index and the LRU; registration and deregistration run outside it.
 */
public final class RegistrationCache implements AutoCloseable {
    private static final AtomicInteger NAMES = new AtomicInteger();
    private static final System.Logger LOG = System.getLogger(RegistrationCache.class.getName());

    private final ProtectionDomain pd;
    private final Set<Access> access;
    private final long maxCachedCount;
    private final String name;
    private final Resource resource;
    private final ReentrantLock lock = new ReentrantLock();

    // Guarded by lock. Every Caffeine call is made under it and Caffeine evicts on the calling thread, so the
    // eviction listener runs under it too and can update the index directly.
    private final RegionIndex index = new RegionIndex();
    private final Cache<CachedRegion, CachedRegion> unused;
    private final Policy.Eviction<CachedRegion, CachedRegion> eviction;
    /** Regions taken out of the cache whose handles the current lock holder closes after unlocking. */
    private final List<CachedRegion> retired = new ArrayList<>();
    private long hits;
    private long misses;
    private long evictions;
    private long invalidations;
    private long leaks;
    private long cachedCount;
    private long cachedBytes;
    private long inUseCount;
    private long inUseBytes;
    private boolean closed;

    private RegistrationCache(Builder b) {
        this.pd = b.pd;
        this.access = Set.copyOf(b.access);
        this.maxCachedCount = b.maxCachedCount;
        this.name = b.name != null ? b.name : "regcache-" + NAMES.incrementAndGet();
        // Caffeine bounds weight or size, not both: it bounds the pinned bytes (the scarce resource, memlock),
        // and trimToCount() bounds the count from Caffeine's own coldest-first order.
        this.unused = Caffeine.newBuilder()
                .executor(Runnable::run)
                .maximumWeight(b.maxCachedBytes / NativeMemory.KERNEL_PAGE)
                .weigher((CachedRegion r, CachedRegion self) -> r.pages)
                .evictionListener((CachedRegion r, CachedRegion self, RemovalCause cause) -> evicted(r))
                .build();
        this.eviction = unused.policy().eviction().orElseThrow();
        this.resource = pd.resource().createChild("regcache", name, () -> {});
    }

    /** A cache of registrations with {@code pd}; see {@link Builder} for the settings. */
    public static Builder builder(ProtectionDomain pd) {
        return new Builder(pd);
    }

    /** Registers {@code segment} with the cache's default rights ({@link Builder#access}); see {@link #acquire(MemorySegment, Set)}. */
    public Registration acquire(MemorySegment segment) {
        return acquire(segment, access);
    }

    /**
     * Makes {@code segment} usable for RDMA with at least {@code rights}: reuses a cached region that covers its
     * pages with those rights, or registers its pages. Close the registration when the work requests that use
     * it are done.
     *
     * @throws IllegalArgumentException if the segment is on the heap or empty, its pages exceed the device's max
     *                                  MR size, or the rights are inconsistent (remote write without local write)
     * @throws ResourceClosedException  if the cache is closed
     * @throws io.mooring.verbs.VerbsException if the device refuses the registration (e.g. the memlock limit)
     */
    public Registration acquire(MemorySegment segment, Set<Access> rights) {
        Access.requireConsistent(rights, "a registration");
        long from = pageStart(segment);
        long to = pageEnd(segment);
        int mask = Access.mask(rights);
        resource.checkOpen();
        Registration reg;
        List<CachedRegion> drop;
        lock.lock();
        try {
            if (closed) throw closedError();
            reg = lookup(from, to, mask, segment);
        } finally {
            drop = unlock();
        }
        deregister(drop);
        if (reg != null) return reg;
        // A miss registers outside the lock; two threads missing on the same pages both register, and the spare
        // region ages out of the LRU like any other.
        MemoryRegion region = pd.register(NativeMemory.segment(from, to - from, null), rights, resource);
        lock.lock();
        try {
            var r = new CachedRegion(region, mask, NativeMemory.KERNEL_PAGE);
            if (closed) {
                retired.add(r); // the cache closed while the region was being registered
            } else {
                region.resource().addPin();
                misses++;
                index.add(r);
                r.users = 1;
                inUseCount++;
                inUseBytes += r.length;
                reg = new Registration(this, r, segment);
            }
        } finally {
            drop = unlock();
        }
        deregister(drop);
        if (reg == null) throw closedError();
        return reg;
    }

    /** A registration on a cached region covering the range, or null. */
    private Registration lookup(long from, long to, int mask, MemorySegment segment) {
        for (CachedRegion r; (r = index.covering(from, to, mask)) != null; ) {
            try {
                r.region.resource().addPin();
            } catch (ResourceClosedException e) {
                withdraw(r); // its PD's tree was closed under the cache: never usable again
                continue;
            }
            hits++;
            if (r.users++ == 0) {
                unused.asMap().remove(r);
                cachedCount--;
                cachedBytes -= r.length;
                inUseCount++;
                inUseBytes += r.length;
            }
            return new Registration(this, r, segment);
        }
        return null;
    }

    /** A registration's Cleaner found it unreachable and still open. */
    void releaseLeaked(Registration.Hold hold) {
        if (release(hold, true)) {
            LOG.log(System.Logger.Level.WARNING, "a registration of {0} in {1} of {2} was never closed: released when "
                    + "it became unreachable; its pages stayed pinned until then", hold.what, hold.cached, name);
        }
    }

    /**
     * Gives a registration's region back: by {@link Registration#close()}, or by its Cleaner ({@code leaked}).
     *
     * @return false if the Cleaner came after a close (nothing to do)
     * @throws IllegalStateException on a second close
     */
    boolean release(Registration.Hold hold, boolean leaked) {
        CachedRegion r = hold.cached;
        List<CachedRegion> drop;
        lock.lock();
        try {
            if (hold.closed) {
                if (leaked) return false;
                throw new IllegalStateException("registration of " + hold.what + " in " + r + " is already closed");
            }
            hold.closed = true;
            if (leaked) leaks++;
            if (--r.users == 0) {
                inUseCount--;
                inUseBytes -= r.length;
                if (r.cached) {
                    cachedCount++;
                    cachedBytes += r.length;
                    unused.put(r, r); // may evict, this region included if it alone exceeds the byte bound
                    trimToCount();
                }
            }
        } finally {
            drop = unlock();
        }
        r.region.resource().removePin(); // deregisters it now if it was retired while in use
        deregister(drop);
        return true;
    }

    /**
     * Takes every region that shares a page with {@code segment} out of the cache: call it before the memory is
     * freed or unmapped. Unused regions are deregistered before this returns; regions still in use are handed out
     * no more, their handles are closed (no new work request can name them), and each is deregistered when its
     * last registration closes.
     *
     * @return how many of them are still in use: until those close, the device may still reach the memory
     * @throws IllegalArgumentException if the segment is on the heap or empty
     * @throws DestroyFailedException   if a deregistration failed
     */
    public int invalidate(MemorySegment segment) {
        long from = pageStart(segment);
        long to = pageEnd(segment);
        int inUse = 0;
        List<CachedRegion> drop;
        lock.lock();
        try {
            for (CachedRegion r : index.overlapping(from, to)) {
                if (r.users > 0) inUse++;
                withdraw(r);
                invalidations++;
            }
        } finally {
            drop = unlock();
        }
        deregister(drop);
        return inUse;
    }

    /** Evicts the coldest unused regions beyond the count bound. Lock held. */
    private void trimToCount() {
        long excess = cachedCount - maxCachedCount;
        if (excess <= 0) return;
        for (CachedRegion r : eviction.coldest((int) Math.min(excess, Integer.MAX_VALUE)).keySet()) {
            unused.asMap().remove(r);
            evicted(r);
        }
    }

    /** Caffeine's eviction listener (and the count bound's): the region was unused, so it goes now. */
    private void evicted(CachedRegion r) {
        assert lock.isHeldByCurrentThread() : "Caffeine evicted outside the cache's lock";
        retire(r);
        evictions++;
    }

    /** Takes a region out of the cache, and out of the LRU if it waits there. Lock held. */
    private void withdraw(CachedRegion r) {
        if (r.users == 0) unused.asMap().remove(r);
        retire(r);
    }

    /**
     * Takes a region out of the index; its handle is closed after unlocking. Lock held; touches no Caffeine
     * structure, so the eviction listener can call it.
     */
    private void retire(CachedRegion r) {
        if (!r.cached) return;
        r.cached = false;
        index.remove(r);
        if (r.users == 0) {
            cachedCount--;
            cachedBytes -= r.length;
        }
        retired.add(r);
    }

    /** Unlocks, handing over the regions retired meanwhile. */
    private List<CachedRegion> unlock() {
        List<CachedRegion> out = retired.isEmpty() ? List.of() : List.copyOf(retired);
        retired.clear();
        lock.unlock();
        return out;
    }

    /**
     * Closes the regions' handles: an unused region is deregistered now, one in use when its last registration
     * closes (its pins hold it). Outside the lock, since a deregistration is a system call.
     */
    private static void deregister(List<CachedRegion> regions) {
        DestroyFailedException failure = null;
        for (CachedRegion r : regions) {
            try {
                r.region.close();
            } catch (DestroyFailedException e) {
                if (failure == null) failure = e;
                else failure.addSuppressed(e);
            }
        }
        if (failure != null) throw failure;
    }

    private ResourceClosedException closedError() {
        return new ResourceClosedException(resource.info(), "cannot acquire from " + name + ": it is closed");
    }

    private static long pageStart(MemorySegment segment) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("cannot register a heap segment (" + segment.byteSize() + " bytes): the"
                    + " garbage collector moves heap memory; use native memory (an Arena, a mapped file, an RdmaArena)");
        }
        if (segment.byteSize() == 0) throw new IllegalArgumentException("cannot register an empty segment");
        return segment.address() & -NativeMemory.KERNEL_PAGE;
    }

    private static long pageEnd(MemorySegment segment) {
        return (segment.address() + segment.byteSize() + NativeMemory.KERNEL_PAGE - 1) & -NativeMemory.KERNEL_PAGE;
    }

    /** A consistent snapshot of the counters. */
    public RegistrationCacheStats stats() {
        lock.lock();
        try {
            return new RegistrationCacheStats(hits, misses, evictions, invalidations, leaks, cachedCount, cachedBytes,
                    inUseCount, inUseBytes);
        } finally {
            lock.unlock();
        }
    }

    /** The cache's place in the lifecycle graph: a child of its PD, the parent of its regions. */
    public Resource resource() {
        return resource;
    }

    public String name() {
        return name;
    }

    /**
     * Closes the cache: unused regions are deregistered now, regions in use when their last registration closes
     * (the graph's DEFERRED policy); acquiring afterwards throws. Under STRICT, open registrations make this throw
     * and the cache stays open. Idempotent.
     *
     * @throws IllegalStateException  under STRICT while registrations are open
     * @throws DestroyFailedException if a deregistration failed
     */
    @Override
    public void close() {
        List<CachedRegion> drop;
        lock.lock();
        try {
            if (closed) return;
            if (resource.graph().policy() == ClosePolicy.STRICT && inUseCount > 0) {
                throw new IllegalStateException("cannot close " + name + " (policy STRICT): " + inUseCount
                        + " regions (" + inUseBytes + " bytes) have open registrations; close them first");
            }
            closed = true;
            index.all().forEach(this::withdraw);
        } finally {
            drop = unlock();
        }
        try {
            deregister(drop);
        } finally {
            resource.close();
        }
    }

    @Override
    public String toString() {
        return "RegistrationCache[" + name + "]";
    }

    /** Configures a cache. Every setting has a default. */
    public static final class Builder {
        private final ProtectionDomain pd;
        private Set<Access> access = EnumSet.of(Access.LOCAL_WRITE);
        private long maxCachedBytes = 256L << 20;
        private long maxCachedCount = 1024;
        private String name;

        private Builder(ProtectionDomain pd) {
            this.pd = Objects.requireNonNull(pd, "pd");
        }

        /** Rights that {@link RegistrationCache#acquire(MemorySegment)} asks for (default LOCAL_WRITE). */
        public Builder access(Set<Access> rights) {
            Access.requireConsistent(rights, "a registration");
            this.access = EnumSet.copyOf(rights);
            return this;
        }

        /** Bytes of unused regions kept registered (default 256 MiB); 0 deregisters each region when released. */
        public Builder maxCachedBytes(long bytes) {
            if (bytes < 0) throw new IllegalArgumentException("max cached bytes must be >= 0, was " + bytes);
            this.maxCachedBytes = bytes;
            return this;
        }

        /** Unused regions kept registered (default 1024): devices limit the number of regions too. */
        public Builder maxCachedCount(long count) {
            if (count < 0) throw new IllegalArgumentException("max cached count must be >= 0, was " + count);
            this.maxCachedCount = count;
            return this;
        }

        /** Names the cache in the lifecycle graph and messages. */
        public Builder name(String name) {
            this.name = Objects.requireNonNull(name, "name");
            return this;
        }

        /** @throws IllegalCallerException naming the flag to add, if this JVM denies Mooring native access */
        public RegistrationCache build() {
            NativeAccess.require(); // it asks the kernel for its page size
            return new RegistrationCache(this);
        }
    }
}
