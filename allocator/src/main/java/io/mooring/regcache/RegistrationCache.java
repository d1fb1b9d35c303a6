package io.mooring.regcache;

import io.mooring.allocator.internal.NativeAccess;
import io.mooring.lifecycle.ClosePolicy;
import io.mooring.lifecycle.DestroyFailedException;
import io.mooring.lifecycle.Resource;
import io.mooring.lifecycle.ResourceBusyException;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceInfo;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.values.Access;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Registrations of memory the caller already has (buffers of its own, mapped files), cached so that using the
 * same memory again costs a lookup instead of an {@code ibv_reg_mr} (tens of microseconds). Shaped like UCX's
 * rcache: regions keyed by whole pages, merged on a miss, a bounded set of unused regions, counters.
 * <pre>{@code
 * var cache = RegistrationCache.builder(pd).maxCachedBytes(1L << 30).build();
 * try (Registration reg = cache.acquire(buffer)) {
 *     qp.post(WorkRequest.write(reg.region(), reg.offset(), len).remote(addr, rkey));
 * }
 * cache.invalidate(buffer);   // before the buffer's memory is freed
 * }</pre>
 *
 * <p><b>A hit</b> takes no lock: it reads the immutable {@link RegionIndex}, takes a pin of the covering region by
 * CAS and counts itself in a striped counter. <b>A miss</b> registers the whole pages around the segment, joined
 * with every overlapping region of the same local-only rights (UCX's merge), outside the lock; concurrent misses
 * on those pages wait for that one registration instead of making their own. Regions in use are never
 * deregistered; unused ones are kept within a bound on bytes and on count, and which go past them is the
 * {@link EvictionPolicy}'s choice (by default the least often used, so that a scan does not evict the hot regions).
 *
 * <p>The caller owns the memory, so the cache cannot know when it is freed: call {@link #invalidate} before freeing
 * (or unmapping) it. An unused region is deregistered before {@code invalidate} returns; one still in use is handed
 * out no more and is deregistered when its last registration closes.
 *
 * <p>In the lifecycle graph the cache is a child of its PD and every region a child of both, so closing the cache
 * (or the PD's tree) deregisters every region, each only after its last registration closed. Thread-safe, for
 * platform and virtual threads; one lock orders the changes (misses, evictions, invalidations, close), never a
 * system call.
 */
public final class RegistrationCache implements AutoCloseable {
    private static final AtomicInteger NAMES = new AtomicInteger();

    private final ProtectionDomain pd;
    private final Set<Access> access;
    private final int accessMask;
    private final long maxCachedBytes;
    private final long maxCachedCount;
    private final String name;
    private final Resource resource;
    private final Eviction eviction;

    /** What a hit reads; replaced (never changed) under {@link #lock}. */
    private volatile RegionIndex index = RegionIndex.EMPTY;
    /** The misses so far: the clock of the LRU, read by every release that leaves a region unused. */
    private volatile long tick;

    private final RegionCounts counts = new RegionCounts();
    /**
     * Regions a merge retired while in use, handles still open for their holders: an invalidation of their pages or
     * the cache's close must still close them. Each leaves at its last release.
     */
    private final Set<CachedRegion> superseded = ConcurrentHashMap.newKeySet();

    // Guarded by lock.
    private final ReentrantLock lock = new ReentrantLock();
    private final List<Pending> pending = new ArrayList<>();
    private boolean closed;

    private RegistrationCache(Builder b) {
        this.pd = b.pd;
        this.access = Set.copyOf(b.access);
        this.accessMask = Access.mask(access);
        this.maxCachedBytes = b.maxCachedBytes;
        this.maxCachedCount = b.maxCachedCount;
        this.name = b.name != null ? b.name : "regcache-" + NAMES.incrementAndGet();
        this.resource = pd.resource().createChild("regcache", name, () -> {});
        this.eviction = b.eviction.create(this, counts, maxCachedBytes, maxCachedCount);
    }

    /** A cache of registrations with {@code pd}; see {@link Builder} for the settings. */
    public static Builder builder(ProtectionDomain pd) {
        return new Builder(pd);
    }

    /** Registers {@code segment} with the cache's default rights ({@link Builder#access}); see {@link #acquire(MemorySegment, Set)}. */
    public Registration acquire(MemorySegment segment) {
        return acquire(segment, access, accessMask);
    }

    /**
     * Makes {@code segment} usable for RDMA with at least {@code rights}: reuses a cached region that covers its
     * pages with those rights, or registers its pages. Close the registration when the work requests that use
     * it are done.
     *
     * @throws IllegalArgumentException if the segment is on the heap or empty, its pages exceed the device's max
     *                                  MR size, or the rights are inconsistent (remote write without local write)
     * @throws ResourceClosedException  if the cache is closed
     * @throws VerbsException           if the device refuses the registration (e.g. the memlock limit)
     */
    public Registration acquire(MemorySegment segment, Set<Access> rights) {
        int mask = Access.mask(rights);
        // The bit test keeps Access.requireConsistent, which masks the set again, off the hit path; it throws.
        if (!Access.writableFor(mask, mask)) {
            Access.requireConsistent(rights, "a registration");
        }
        return acquire(segment, rights, mask);
    }

    private Registration acquire(MemorySegment segment, Set<Access> rights, int mask) {
        long from = Pages.start(segment);
        long to = Pages.end(segment);
        resource.checkOpen();
        // The hit path: no lock. A region retired since the index was read refuses the CAS; the slow path looks again.
        CachedRegion r = index.covering(from, to, mask);
        if (r != null) {
            int pins = r.tryPin();
            if (pins >= 0) return hit(r, pins, segment);
        }
        return acquireSlow(from, to, mask, rights, segment);
    }

    private Registration hit(CachedRegion r, int pinsBefore, MemorySegment segment) {
        counts.hits.increment();
        if (pinsBefore == 0) counts.unused(r, -1);
        return new Registration(this, r, segment);
    }

    /** Under the lock: a hit after all, a registration in flight to wait for, or this thread's own miss. */
    private Registration acquireSlow(long from, long to, int mask, Set<Access> rights, MemorySegment segment) {
        for (;;) {
            Pending wait = null;
            Pending mine = null;
            List<CachedRegion> drop = new ArrayList<>();
            lock.lock();
            try {
                if (closed) throw closedError();
                for (CachedRegion r; (r = index.covering(from, to, mask)) != null; ) {
                    int pins = r.tryPin();
                    if (pins >= 0) return hit(r, pins, segment);
                    // Retirements happen under this lock, so this one's MR was closed under the cache (its PD's
                    // tree closed): it can never serve again.
                    withdraw(List.of(r), drop, true);
                }
                for (Pending p : pending) {
                    if (p.serves(from, to, mask)) wait = p;
                }
                if (wait == null) {
                    mine = Pending.joining(index, from, to, mask);
                    pending.add(mine);
                }
            } finally {
                lock.unlock();
                deregister(drop);
            }
            if (mine != null) return miss(mine, from, to, rights, segment);
            wait.awaitDone();
        }
    }

    /** Registers a pending range outside the lock, then publishes it and wakes the misses waiting for it. */
    private Registration miss(Pending mine, long from, long to, Set<Access> rights, MemorySegment segment) {
        RegistrationEvent event = RegistrationEvents.recording() ? RegistrationEvent.begun() : null;
        List<CachedRegion> drop = new ArrayList<>();
        CachedRegion r;
        boolean open;
        try {
            MemoryRegion mr = register(mine, from, to, rights);
            mr.resource().addPin(); // for the creator's pin
            r = new CachedRegion(mr, mine.access);
            lock.lock();
            try {
                pending.remove(mine);
                tick = ++counts.misses;
                counts.live(r, +1);
                open = !closed;
                if (closed || mine.invalidated) {
                    r.retire();
                    drop.add(r); // its handle closes now; the creator's release deregisters it
                } else {
                    List<CachedRegion> joined = mine.merging.stream().filter(m -> !m.isRetired()).toList();
                    counts.merges += joined.size();
                    if (event != null) event.commit(name, "register", r, joined.size());
                    withdraw(joined, drop, false);
                    index = index.with(r, List.of()); // withdraw took the joined ones out
                }
            } finally {
                lock.unlock();
            }
        } catch (Throwable t) {
            lock.lock();
            try {
                pending.remove(mine);
            } finally {
                lock.unlock();
            }
            throw t;
        } finally {
            mine.done();
            deregister(drop);
        }
        if (!open) {
            release(r); // the cache closed meanwhile: no one may use the region
            throw closedError();
        }
        eviction.added(r);
        if (r.isRetired()) eviction.left(r); // invalidated since it was published
        return new Registration(this, r, segment);
    }

    /** Registers the pending range; if a merged range is refused, the requested pages alone (as UCX does). */
    private MemoryRegion register(Pending p, long from, long to, Set<Access> rights) {
        try {
            return pd.register(Pages.span(p.from, p.to), rights, resource);
        } catch (VerbsException | IllegalArgumentException refused) {
            if (p.merging.isEmpty()) throw refused;
            // The joined pages may differ in protection (a read-only page cannot take LOCAL_WRITE) or exceed the
            // device's largest region: keep them apart.
            MemoryRegion mr = pd.register(Pages.span(from, to), rights, resource);
            lock.lock();
            try {
                p.merging.clear();
            } finally {
                lock.unlock();
            }
            return mr;
        }
    }

    /** A registration became unreachable unclosed: the tracker releases its pin (and logs the leak). */
    void releaseLeaked(RegionPin pin) {
        counts.leaks.increment();
        RegistrationEvents.record(name, "leak", pin.cached);
        release(pin.cached);
    }

    /** Releases a pin of {@code r}: by {@link Registration#close()} or by the leak tracker. */
    void release(CachedRegion r) {
        int after = r.release(tick);
        if (after == CachedRegion.RETIRED) {
            superseded.remove(r);
            counts.live(r, -1);
            eviction.left(r);
        } else if (after == 0) {
            counts.unused(r, +1);
            eviction.unused(r);
        }
    }

    /** Waits until the evictions the policy already chose are done; for tests, whose counters must agree. */
    void settleEvictions() {
        eviction.settle();
    }

    /** What a hit reads now. */
    RegionIndex index() {
        return index;
    }

    /**
     * Evicts the unused regions {@code pick} retires (under the lock, by {@link CachedRegion#retireIfUnused}: a hit
     * may take one first) and deregisters them: the {@link Eviction}'s part. Returns how many.
     *
     * @throws DestroyFailedException if a deregistration failed
     */
    int evict(Function<RegionIndex, List<CachedRegion>> pick) {
        List<CachedRegion> drop = new ArrayList<>();
        lock.lock();
        try {
            if (!closed) drop.addAll(pick.apply(index));
            for (CachedRegion r : drop) {
                counts.unused(r, -1);
                counts.live(r, -1); // deregistered as soon as its handle closes
                RegistrationEvents.record(name, "evict", r);
            }
            counts.evictions += drop.size();
            if (!drop.isEmpty()) index = index.with(null, drop);
        } finally {
            lock.unlock();
            deregister(drop);
        }
        return drop.size();
    }

    /**
     * Takes every region that shares a page with {@code segment} out of the cache: call it before the memory is
     * freed or unmapped. Unused regions are deregistered before this returns; regions still in use are handed out
     * no more, their handles are closed (no new work request can name them), and each is deregistered when its
     * last registration closes (regions a merge retired while in use included). A registration of those pages in
     * flight is retired as soon as it completes.
     *
     * @return how many of them are still in use (or being registered): until those close, the device may still
     *         reach the memory
     * @throws IllegalArgumentException if the segment is on the heap or empty
     * @throws DestroyFailedException   if a deregistration failed
     */
    public int invalidate(MemorySegment segment) {
        long from = Pages.start(segment);
        long to = Pages.end(segment);
        List<CachedRegion> drop = new ArrayList<>();
        int inUse = 0;
        lock.lock();
        try {
            List<CachedRegion> hit = index.overlapping(from, to);
            inUse += withdraw(hit, drop, true);
            counts.invalidations += hit.size();
            hit.forEach(r -> RegistrationEvents.record(name, "invalidate", r));
            for (CachedRegion r : superseded) {
                if (r.start < to && from < r.end && superseded.remove(r)) {
                    drop.add(r);
                    counts.invalidations++;
                    RegistrationEvents.record(name, "invalidate", r);
                    if (r.inUse()) inUse++;
                }
            }
            for (Pending p : pending) {
                if (p.invalidate(from, to)) {
                    counts.invalidations++;
                    inUse++;
                }
            }
        } finally {
            lock.unlock();
            deregister(drop);
        }
        return inUse;
    }

    /**
     * Retires regions and takes them out of the index. Unused ones go to {@code drop}, deregistered after unlocking;
     * those in use close their handles then too if {@code closeInUse} (their memory is going away), otherwise at
     * their last release (a merge: their holders go on posting work requests that name them). Lock held.
     *
     * @return how many were in use
     */
    private int withdraw(List<CachedRegion> regions, List<CachedRegion> drop, boolean closeInUse) {
        int inUse = 0;
        List<CachedRegion> out = new ArrayList<>();
        for (CachedRegion r : regions) {
            int pins = r.retire();
            if (pins < 0) continue;
            out.add(r);
            if (pins == 0) {
                counts.unused(r, -1);
                counts.live(r, -1); // deregistered as soon as its handle closes
                drop.add(r);
            } else {
                inUse++;
                if (closeInUse) drop.add(r);
                else superseded.add(r);
            }
        }
        if (!out.isEmpty()) index = index.with(null, out);
        return inUse;
    }

    /** The regions leave the policy and {@link CachedRegion#deregister their handles close}. Outside the lock. */
    private void deregister(List<CachedRegion> regions) {
        regions.forEach(eviction::left);
        CachedRegion.deregister(regions);
    }

    private ResourceClosedException closedError() {
        return new ResourceClosedException(resource.info(), "cannot acquire from " + name + ": it is closed");
    }

    /**
     * The counters. Each is exact, but hits and releases do not stop while they are read: taken while no thread
     * acquires or releases, the numbers agree with each other.
     */
    public RegistrationCacheStats stats() {
        lock.lock();
        try {
            return counts.snapshot();
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
     * and the cache stays open; a region a posted work request still holds (its registration closed too early) makes
     * this throw the graph's {@link io.mooring.lifecycle.ResourceBusyException} once the cache is closed for
     * acquiring, and a later call completes the close after the request. Idempotent.
     *
     * @throws ResourceBusyException  under STRICT while registrations are open (their regions its live children)
     * @throws DestroyFailedException if a deregistration failed
     */
    @Override
    public void close() {
        List<CachedRegion> drop = new ArrayList<>();
        lock.lock();
        try {
            // Once closed, only the resource's close is left to retry: under STRICT it refuses until the regions that
            // posted requests still held are deregistered.
            if (!closed) {
                long inUse = counts.inUse();
                if (resource.graph().policy() == ClosePolicy.STRICT && (inUse > 0 || !pending.isEmpty())) {
                    List<ResourceInfo> regions = new ArrayList<>();
                    for (CachedRegion r : index.all()) if (r.inUse()) regions.add(r.region.resource().info());
                    for (CachedRegion r : superseded) regions.add(r.region.resource().info());
                    throw new ResourceBusyException(resource.info(), regions, "cannot close " + name
                            + " (policy STRICT): " + inUse + " regions have open registrations; close them first");
                }
                closed = true;
                withdraw(index.all(), drop, true);
                drop.addAll(superseded);
                superseded.clear();
            }
        } finally {
            lock.unlock();
        }
        try {
            deregister(drop);
        } finally {
            eviction.close();
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
        private EvictionPolicy eviction = EvictionPolicy.FREQUENCY;
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

        /** Bytes of unused regions kept registered (default 256 MiB); 0 deregisters each once released (see the policy). */
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

        /** Which unused regions go when they exceed the bounds (default {@link EvictionPolicy#FREQUENCY}). */
        public Builder eviction(EvictionPolicy policy) {
            this.eviction = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /** Names the cache in the lifecycle graph and messages. */
        public Builder name(String name) {
            this.name = Objects.requireNonNull(name, "name");
            return this;
        }

        /** @throws IllegalCallerException naming the flag to add, if this JVM denies Mooring native access */
        public RegistrationCache build() {
            NativeAccess.require("the registration cache widens segments to whole pages through FFM");
            return new RegistrationCache(this);
        }
    }
}
