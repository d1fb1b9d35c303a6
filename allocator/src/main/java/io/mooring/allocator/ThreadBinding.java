package io.mooring.allocator;

import java.lang.foreign.Arena;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How a thread finds its state in an arena (its {@link Caller}: shard, thread cache, mt-free list), and which
 * threads get a cache — Netty's {@code PoolThreadLocalCache}.
 *
 * <ul>
 *   <li><b>Lookup.</b> A {@code ThreadLocal} lookup costs more than the rest of a cached allocation, so a thread
 *       is first found in a {@value #SLOTS}-slot table indexed by thread id, written once per thread and then only
 *       read; a thread whose slot another thread holds falls back to the {@code ThreadLocal}. Virtual threads take
 *       slots too: with the {@code ThreadLocal} off their hot path, allocate compiles small enough to be inlined
 *       (design.md §6). A slot keeps at most one ended thread's Caller until the collector's next pass
 *       ({@link #unbindEndedThreads}; every purge): {@value #SLOTS} at most, whatever the number of threads. The
 *       {@code ThreadLocal} holds Callers weakly: a Caller reaches its arena, and a value that reaches its own key
 *       is never expunged, so a strong one would keep every closed arena alive for as long as the thread lives.</li>
 *   <li><b>Caches.</b> Shards are assigned round-robin. A platform thread gets a {@link ThreadCache}, registered
 *       (see {@link #ownersWithCache()}) so that it is flushed when the thread ends or the arena closes. A virtual
 *       thread shares its shard's {@link Magazine} — a cache each would be unbounded in total — and leaves nothing
 *       behind when it ends: its Caller is reachable only from its ThreadLocal and its live blocks. A busy one —
 *       {@value #PROMOTE_AFTER} allocations, from the magazine or (held by others) from the shard — is
 *       {@linkplain #promote promoted} to a cache of its own, as a platform thread's, which spares it the magazine's
 *       CAS per call, and the shard's lock when the magazine is held: at most two per carrier at once
 *       ({@link #maxPromoted}), each flushed by the collector's first pass after its thread ended, which frees its
 *       place for the next (a long-lived handler keeps one; a thread per request never reaches one).</li>
 *   <li><b>Flushes and trims.</b> {@link #requestFlush()} and {@link #requestTrim()} bump an epoch that owners
 *       honour at their next call ({@link #current}): a flush empties the cache, a trim gives back what it has not
 *       needed lately ({@link ThreadCache#trim}); {@link #retireCaches()} (the arena's close) makes every cache
 *       flush once more and never serve again. The magazines, whose users are many and brief, honour them at
 *       once ({@link #honourMagazines}).</li>
 *   <li><b>Frees.</b> {@link #freeLocal} is the owner's free, into its cache; {@link #free} frees into the calling
 *       thread's cache whoever allocated the block (jemalloc's way), else into the block's shard;
 *       {@link #freeToShard} is the collector's.</li>
 * </ul>
 */
final class ThreadBinding {
    /** Platform threads found by thread id before falling back to the ThreadLocal (a power of two). */
    static final int SLOTS = 64;
    /** A virtual thread's allocations before it asks for a cache of its own (a power of two). */
    static final int PROMOTE_AFTER = 4096;
    private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Caller[].class);
    private static final VarHandle EPOCH;

    static {
        try {
            EPOCH = MethodHandles.lookup().findVarHandle(ThreadBinding.class, "epoch", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final RdmaArena arena;
    private final Shard[] shards;
    private final AtomicInteger nextShard = new AtomicInteger();
    private final long cacheBytesPerClass;
    private final long cacheMaxSize;
    private final Caller[] slots = new Caller[SLOTS]; // written by CAS (SLOT), read plainly
    /** Weak: see the class comment. */
    private final ThreadLocal<WeakReference<Caller>> callerOfThread = new ThreadLocal<>();
    /** The threads with a cache, until they are found ended: what keeps their Callers (and caches) alive. */
    private final Set<Caller> ownersWithCache = ConcurrentHashMap.newKeySet();
    /** One per shard, same index: the virtual threads' caches. Empty when caching is off. */
    private final Magazine[] magazines;
    /** Virtual threads with a cache of their own, ended ones included until the collector flushes them. */
    private final AtomicInteger promoted = new AtomicInteger();
    /** How many may have one at once: two per carrier thread. */
    private final int maxPromoted = 2 * Integer.getInteger("jdk.virtualThreadScheduler.parallelism",
            Runtime.getRuntime().availableProcessors());
    /** What the caches of ended threads counted. Guarded by the collector's lock (see {@link MtFreeCollector}). */
    private final CacheCounters endedCaches = new CacheCounters();
    @SuppressWarnings("unused") // through EPOCH, and read as a volatile
    private volatile int epoch;
    /** The flushes requested so far: an epoch bump is a flush if this changed with it, else a trim. */
    private volatile int flushes;
    private volatile boolean retired;

    ThreadBinding(RdmaArena arena, Shard[] shards, long cacheBytesPerClass, long cacheMaxSize) {
        this.arena = arena;
        this.shards = shards;
        this.cacheBytesPerClass = cacheBytesPerClass;
        this.cacheMaxSize = cacheMaxSize;
        this.magazines = new Magazine[cacheBytesPerClass == 0 ? 0 : shards.length];
        for (int i = 0; i < magazines.length; i++) {
            magazines[i] = new Magazine(new ThreadCache(shards[i], cacheBytesPerClass, cacheMaxSize));
        }
    }

    // ---- lookup ----------------------------------------------------------------------------------------------

    /** The calling thread's state, made on first use. On the fast path: kept small, to be inlined. */
    Caller caller() {
        Thread t = Thread.currentThread();
        Caller c = slots[slotOf(t)]; // a Caller's fields are final: safe to read even if just published
        return c != null && c.thread == t ? c : callerOfThreadLocal(t);
    }

    /**
     * The calling thread's state through the ThreadLocal, made on first use. What keeps a Caller alive is what needs
     * it: {@link #ownersWithCache}, its live blocks, the collector's owners with mt frees. One that nothing needs any
     * more has nothing to carry over; the thread gets a new one at its next call.
     */
    private Caller callerOfThreadLocal(Thread t) {
        WeakReference<Caller> ref = callerOfThread.get();
        Caller mine = ref == null ? null : ref.get();
        if (mine == null) {
            mine = newCaller(t);
            callerOfThread.set(new WeakReference<>(mine));
        }
        Caller held = slots[slotOf(t)]; // free, or an ended thread's: take it
        if (held == null || !held.thread.isAlive()) SLOT.compareAndSet(slots, slotOf(t), held, mine);
        return mine;
    }

    /** The calling thread's state if it has one; never makes one. */
    Caller existingCaller() {
        Thread t = Thread.currentThread();
        Caller c = slots[slotOf(t)];
        if (c != null && c.thread == t) return c;
        WeakReference<Caller> ref = callerOfThread.get();
        return ref == null ? null : ref.get();
    }

    private static int slotOf(Thread t) {
        return (int) t.threadId() & (SLOTS - 1);
    }

    /**
     * A thread's state. The epoch is read before the retired flag: a cache made while the arena closes sees a stale
     * epoch at once, so is retired unused.
     */
    private Caller newCaller(Thread t) {
        int s = Math.floorMod(nextShard.getAndIncrement(), shards.length);
        Shard shard = shards[s];
        int e = epoch;
        ThreadCache cache = t.isVirtual() || cacheBytesPerClass == 0 || retired ? null
                : new ThreadCache(shard, cacheBytesPerClass, cacheMaxSize);
        Magazine magazine = t.isVirtual() && magazines.length > 0 ? magazines[s] : null;
        var caller = new Caller(arena, t, shard, cache, magazine);
        if (cache != null) register(caller, cache, e);
        return caller;
    }

    private void register(Caller c, ThreadCache cache, int epoch) {
        cache.epoch = epoch;
        cache.flushes = flushes;
        ownersWithCache.add(c);
    }

    /**
     * Counts an allocation of the calling virtual thread, from its magazine or (held by another) its shard, promoting
     * it every {@value #PROMOTE_AFTER}. On the fast path: kept small, to be inlined.
     */
    void countTowardsPromotion(Caller c) {
        if ((++c.magazineAllocations & (PROMOTE_AFTER - 1)) == 0) promote(c);
    }

    /**
     * Gives the calling virtual thread, busy on its magazine, a cache of its own if fewer than {@link #maxPromoted}
     * have one; else asks for a collector pass, which frees the places of ended ones (it asks again after as many
     * allocations more). Its blocks from the magazine are freed into the new cache like any other.
     */
    void promote(Caller c) {
        int e = epoch; // before the retired flag, as in newCaller
        if (retired) return;
        int n;
        do {
            n = promoted.get();
            if (n >= maxPromoted) {
                arena.collector.schedule();
                return;
            }
        } while (!promoted.compareAndSet(n, n + 1));
        var cache = new ThreadCache(c.shard, cacheBytesPerClass, cacheMaxSize);
        c.cache = cache; // before the magazine goes: the owner's fast path reads the magazine first
        c.magazine = null;
        register(c, cache, e);
    }

    /** Empties the slots of threads that have ended, for other threads to take. */
    void unbindEndedThreads() {
        for (int i = 0; i < SLOTS; i++) {
            Caller c = slots[i];
            if (c != null && !c.thread.isAlive()) SLOT.compareAndSet(slots, i, c, null);
        }
    }

    // ---- caches ----------------------------------------------------------------------------------------------

    /** The flush epoch caches honour: a cache whose epoch differs must flush (or retire) before it serves again. */
    int epoch() {
        return epoch;
    }

    /** Asks every cache to flush at its owner's next call. */
    synchronized void requestFlush() {
        flushes++; // before the epoch: an owner that sees the new epoch sees this too
        EPOCH.getAndAdd(this, 1);
    }

    /** Asks every cache to trim at its owner's next call (the decay purges do, see {@link ThreadCache#trim}). */
    synchronized void requestTrim() {
        EPOCH.getAndAdd(this, 1);
    }

    /** The arena closes: every cache flushes a last time and never serves again; the magazines do so now. */
    void retireCaches() {
        retired = true;
        EPOCH.getAndAdd(this, 1); // after the flag: an owner that sees the new epoch sees the flag too
        for (Magazine m : magazines) {
            m.hold();
            m.cache.retire();
            m.letGo();
        }
    }

    /**
     * Makes the magazines honour the flush or trim just requested now: their users are many and brief, nobody to wait
     * for as for a thread's cache.
     */
    void honourMagazines() {
        for (Magazine m : magazines) {
            m.hold();
            current(m.cache);
            m.letGo();
        }
    }

    boolean cachesRetired() {
        return retired;
    }

    /**
     * The calling owner's cache, after honouring a flush or trim requested since its last use; null once caches are
     * retired: the cache is then flushed a last time by whoever retires it first (here, or the collector) and its
     * epoch is left stale, so that the fast paths never touch it again.
     */
    ThreadCache current(ThreadCache cache) {
        if (cache != null) {
            int e = epoch;
            if (cache.epoch != e) {
                if (retired) {
                    cache.retire();
                    return null;
                }
                int f = flushes; // after the epoch: at least as new as the requests that epoch announces
                if (cache.flushes != f) {
                    cache.flushAll();
                    cache.flushes = f;
                } else {
                    cache.trim();
                }
                cache.epoch = e;
            }
        }
        return cache;
    }

    /** How many virtual threads may have a cache of their own at once. */
    int maxPromoted() {
        return maxPromoted;
    }

    /** The threads with a cache that have not been found ended yet. */
    Set<Caller> ownersWithCache() {
        return ownersWithCache;
    }

    /** Flushes the cache of an owner that has ended (its writes are visible), keeping what it counted. */
    void flushEndedOwnersCache(Caller c) {
        if (!ownersWithCache.remove(c)) return;
        endedCaches.add(c.cache);
        c.cache.retire();
        if (c.thread.isVirtual()) promoted.decrementAndGet(); // its place is free for another busy virtual thread
    }

    // ---- stats (under the collector's lock) ------------------------------------------------------------------

    /** The caches of live owners: one list for a whole snapshot, so that each cache is counted in every step. */
    List<ThreadCache> liveCaches() {
        List<ThreadCache> caches = new ArrayList<>();
        for (Caller c : ownersWithCache) caches.add(c.cache);
        for (Magazine m : magazines) caches.add(m.cache);
        return caches;
    }

    /** Adds the allocations the caches served (ended owners' included), and how many were hits and misses. */
    void countAllocations(List<ThreadCache> caches, StatsSnapshot s) {
        long misses = endedCaches.misses;
        for (ThreadCache c : caches) misses += c.misses(); // first: a refill is counted just before its allocation
        long allocations = 0;
        for (int k = 0; k < ThreadCache.CLASSES; k++) {
            long n = endedCaches.allocations[k];
            for (ThreadCache c : caches) n += c.allocations(k);
            s.addAllocations(k, n);
            allocations += n;
        }
        s.cacheMisses = misses;
        s.cacheHits = Math.max(0, allocations - misses);
    }

    /** Adds the frees the caches took (ended owners' included). */
    void countFrees(List<ThreadCache> caches, StatsSnapshot s) {
        for (int k = 0; k < ThreadCache.CLASSES; k++) {
            long n = endedCaches.frees[k];
            for (ThreadCache c : caches) n += c.frees(k);
            s.addFrees(k, n);
        }
    }

    /** Adds what the caches hold now. */
    void countHeld(List<ThreadCache> caches, StatsSnapshot s) {
        for (ThreadCache c : caches) {
            s.cachedRegions += c.cached();
            s.cachedLargeBytes += c.cachedLargeBytes();
        }
    }

    // ---- frees -----------------------------------------------------------------------------------------------

    /**
     * A local free: the owner closed {@code b}. Into its cache while the cache honours the current epoch; otherwise
     * (a flush asked, the arena closing, a class not cached) the general way. On the fast path: kept small, to be
     * inlined into {@code Block.close}.
     */
    void freeLocal(Block b) {
        // One path for a platform thread's cache and a virtual thread's magazine, as in RdmaArena.allocate (why there).
        Caller owner = b.owner;
        Magazine m = owner.magazine;
        ThreadCache cache = m == null ? owner.cache : m.cache;
        if (cache != null && (m == null || m.tryHold())) {
            try {
                if (cache.epoch == epoch && cache.free(b)) return;
            } finally {
                if (m != null) m.letGo();
            }
        }
        free(b);
    }

    /**
     * Frees {@code b} on the calling thread, whichever thread allocated it: into the caller's cache (or magazine, for
     * a virtual thread) if it takes the class, else into the block's shard. jemalloc's tcache does the same with a
     * foreign pointer: the block's region joins this thread's stock and goes back to its own shard with the next
     * flush, in a batch under one lock, so a free from another thread costs a local free plus a share of that lock —
     * no atomic instruction per block, and nothing waits for the owner. Only for a block no other close can race and
     * no segment can reach any more: one closed after a hand-off, a shared one, or one collected by its owner.
     */
    void free(Block b) {
        Caller me = caller();
        Magazine m = me.magazine;
        if (m != null ? freeToMagazine(m, b) : freeToCache(current(me.cache), b)) return;
        freeToShard(b);
    }

    /** Frees {@code b} into its shard: for the collector, whose thread keeps no cache. */
    void freeToShard(Block b) {
        b.shard().free(b);
    }

    private static boolean freeToCache(ThreadCache cache, Block b) {
        return cache != null && cache.free(b);
    }

    /** Frees {@code b} into a magazine; false if another thread holds it, or it does not take the class. */
    private boolean freeToMagazine(Magazine m, Block b) {
        if (!m.tryHold()) return false;
        try {
            ThreadCache cache = current(m.cache);
            return cache != null && cache.free(b);
        } finally {
            m.letGo();
        }
    }

    /**
     * A block from a virtual thread's magazine, or null if another thread holds it, the class is not cached there or
     * caches are retired.
     */
    Block allocateFromMagazine(Caller caller, int c, long size, Arena scope) {
        Magazine m = caller.magazine;
        if (m == null || !m.tryHold()) return null;
        try {
            ThreadCache cache = current(m.cache);
            return cache == null ? null : cache.allocate(caller, c, size, scope);
        } finally {
            m.letGo();
        }
    }
}
