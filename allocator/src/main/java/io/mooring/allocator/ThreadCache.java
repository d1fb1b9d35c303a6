package io.mooring.allocator;

import java.lang.foreign.Arena;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;

/**
 * A platform thread's private stock of free regions per class, so that most allocations and frees touch no lock
 * (jemalloc's tcache): small regions (whose home is their {@link Slab}) and page runs of the large classes up
 * to {@value #LARGE_MAX} bytes (whose home is their {@link Chunk}).
 *
 * <p>Bounded per class: {@code bytesPerClass / size} entries to start with, between {@value #MIN_SLOTS} and
 * {@value #MAX_SLOTS} for small classes and at least one for large ones, growing up to {@value #GROWTH} times that
 * (at most {@value #MAX_SLOTS}) for a class the thread only allocates or only frees ({@link #refill}), and shrinking
 * back as the decay purges {@linkplain #trim() trim} it. A miss refills half of a small class's slots from the
 * shard's bin in one locked step (one page run for a large class); a full stack flushes half back the same way —
 * each region to its own shard's bin or chunk: a thread that closes blocks handed off to it keeps their regions here
 * whoever allocated them (jemalloc's tcache does the same), so that is their way back.
 *
 * <p>Only the owner touches it — except after the owner ended (then the collector flushes it; thread termination
 * makes its last writes visible), and once the arena closes: then it is {@linkplain #retire() retired} — flushed
 * once more by whoever gets there first, its owner or the collector that found the owner between calls — and is
 * never used again. Virtual threads get none of their own: a cache per virtual thread would be unbounded in total;
 * they share their shard's, held by one at a time ({@link Magazine}), which is its owner while held.
 *
 * <p>The allocation and free counters are written by the owner alone, with release stores (a plain store on
 * x86), and read by {@code stats()} with acquire loads: a reader that sees an allocation counted also sees every
 * free the owner counted before it.
 */
final class ThreadCache {
    static final int MIN_SLOTS = 4;
    static final int MAX_SLOTS = 64;
    /** How many times its base a class's stack may grow to (at most {@link #MAX_SLOTS}); see {@link #refill}. */
    static final int GROWTH = 4;
    /** The largest class cached (jemalloc's {@code tcache_max}); larger blocks always go through the shard. */
    static final long LARGE_MAX = 128 << 10;
    /** Classes {@code 0 .. CLASSES - 1} are cached: every small one and the large ones up to {@link #LARGE_MAX}. */
    static final int CLASSES = SizeClasses.indexOf(LARGE_MAX) + 1;
    private static final VarHandle RETIRED;

    static {
        try {
            RETIRED = MethodHandles.lookup().findVarHandle(ThreadCache.class, "retired", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * One class's stock, newest on top (Netty's {@code MemoryRegionCache}): an object per class, so that the fast
     * path loads one array element to reach everything the class needs, not one per array of a class-indexed table.
     */
    private static final class Stack {
        private static final VarHandle ALLOCATIONS;
        private static final VarHandle FREES;

        static {
            try {
                var lookup = MethodHandles.lookup();
                ALLOCATIONS = lookup.findVarHandle(Stack.class, "allocations", long.class);
                FREES = lookup.findVarHandle(Stack.class, "frees", long.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        final long[] addresses; // as long as the stack may grow
        final Object[] homes;   // a Slab (small class) or a Chunk (large class)
        final int base;         // the slots the stack starts with, and returns to at every flushAll
        int limit;              // the slots in use: base, doubled as it runs one way (see ThreadCache#refill)
        int count;
        boolean lastMissWasRefill; // of the stack's last miss: a refill (empty) or a flush (full)
        @SuppressWarnings("unused") // through ALLOCATIONS
        private long allocations; // handed out from here (hits and misses)
        @SuppressWarnings("unused") // through FREES
        private long frees;       // freed into here
        long usedAtTrim;          // allocations + frees at the last trim: none since means the class lies idle

        Stack(int base, int max) {
            this.base = base;
            this.limit = base;
            addresses = new long[max];
            homes = new Object[max];
        }

        /** A second refill, or flush, in a row: a thread that only allocates, or only frees, this class. */
        void missed(boolean refill) {
            if (lastMissWasRefill == refill) limit = Math.min(2 * limit, addresses.length);
            lastMissWasRefill = refill;
        }

        void countAllocation() {
            ALLOCATIONS.setRelease(this, allocations + 1);
        }

        void countFree() {
            FREES.setRelease(this, frees + 1);
        }

        long allocations() {
            return (long) ALLOCATIONS.getAcquire(this);
        }

        long frees() {
            return (long) FREES.getAcquire(this);
        }

        /** Allocations and frees since the last trim (0: the class lay idle), counting anew from here. */
        long useSinceLastTrim() {
            long used = allocations() + frees();
            long since = used - usedAtTrim;
            usedAtTrim = used;
            return since;
        }
    }

    final Shard shard;
    /** The largest request served here: the large classes up to {@link #LARGE_MAX}, below the huge threshold. */
    final long maxSize;
    private final Stack[] stacks = new Stack[CLASSES];
    private volatile long misses;                         // refills; written by the owner only
    @SuppressWarnings("unused") // through RETIRED
    private volatile boolean retired;
    int epoch;   // the arena's epoch this cache last honoured (see ThreadBinding#current)
    int flushes; // the arena's flush requests this cache has honoured

    ThreadCache(Shard shard, long bytesPerClass, long maxSize) {
        this.shard = shard;
        this.maxSize = maxSize;
        for (int c = 0; c < CLASSES; c++) {
            long fit = bytesPerClass / SizeClasses.size(c);
            int base = isSmall(c) ? Math.clamp(fit, MIN_SLOTS, MAX_SLOTS) : Math.clamp(fit, 1, MAX_SLOTS);
            stacks[c] = new Stack(base, Math.min(GROWTH * base, MAX_SLOTS));
        }
    }

    static boolean isSmall(int c) {
        return c < SizeClasses.SMALL_CLASSES;
    }

    /**
     * A block of a cached region of class {@code c} (refilling when empty) for its owner. On the fast path: kept
     * small, to be inlined into {@code RdmaArena.allocate}.
     */
    Block allocate(Caller owner, int c, long size, Arena sharedScope) {
        Stack s = stacks[c];
        if (s.count == 0) refill(c, s);
        int top = --s.count;
        // The slot above the top is not cleared: no write barrier on the fast path. Until a free overwrites it, it
        // may keep a since-released slab's or chunk's Java object reachable (a few per class, never its memory).
        s.countAllocation();
        return new Block(owner, s.homes[top], s.addresses[top], size, sharedScope);
    }

    /**
     * Refills an empty stack. A stack that misses the same way twice in a row — refills with no flush between, or
     * flushes with no refill — doubles its slots, up to {@value #GROWTH} times its base: one side of a hand-off (the
     * producer only allocates, the consumer only frees) then moves regions through the bin in batches that many times
     * larger, a lock per batch. Every {@link #flushAll} takes the stack back to its base, every {@link #trim} halfway.
     */
    private void refill(int c, Stack s) {
        misses = misses + 1; // the owner is the only writer
        s.missed(true);
        s.count = isSmall(c)
                ? shard.bins[c].refill(shard, s.addresses, s.homes, s.limit)
                : shard.refillRun(SizeClasses.largePages(c), s.addresses, s.homes);
    }

    /**
     * Keeps a freed block's region or page run, if its class is cached; false if not (a page run serving a small
     * request with a large alignment has no large class: it goes back to its chunk).
     */
    boolean free(Block b) {
        Slab slab = b.slab();
        if (slab != null) {
            push(slab.classIndex, slab, b.address());
        } else if (b.size() > SizeClasses.SMALL_MAX && b.size() <= maxSize) {
            push(SizeClasses.indexOf(b.size()), b.chunk(), b.address());
        } else {
            return false;
        }
        return true;
    }

    /** Keeps a freed region of class {@code c}, flushing half of the stack when it is full. */
    private void push(int c, Object home, long address) {
        Stack s = stacks[c];
        if (s.count == s.limit) {
            s.missed(false);
            flush(c, (s.count + 1) / 2);
        }
        int top = s.count++;
        s.addresses[top] = address;
        // Most of a class's regions share a slab, often the one the slot still holds: skipping that store skips G1's
        // post-write barrier too, whose StoreLoad fence (JDK 25) was a sixth of the 1024-live benchmark's samples.
        if (s.homes[top] != home) s.homes[top] = home;
        s.countFree();
    }

    /**
     * Flushes the oldest {@code n} cached regions of class {@code c} into their shards' bins or chunks (see the class
     * comment): one locked step per run of regions of the same shard.
     */
    private void flush(int c, int n) {
        Stack s = stacks[c];
        long[] a = s.addresses;
        Object[] h = s.homes;
        for (int from = 0, to; from < n; from = to) {
            Shard home = shardOf(h[from]);
            to = from + 1;
            while (to < n && shardOf(h[to]) == home) to++;
            if (isSmall(c)) home.bins[c].flush(home, a, h, from, to);
            else home.flushRuns(SizeClasses.largePages(c), a, h, from, to);
        }
        int left = s.count - n;
        System.arraycopy(a, n, a, 0, left);
        System.arraycopy(h, n, h, 0, left);
        Arrays.fill(h, left, s.count, null);
        s.count = left;
    }

    private static Shard shardOf(Object home) {
        return home instanceof Slab s ? s.chunk.shard : ((Chunk) home).shard;
    }

    /** Flushes every cached region (on the arena's flush epoch, on retirement, or after the owner ended). */
    void flushAll() {
        for (int c = 0; c < CLASSES; c++) {
            Stack s = stacks[c];
            if (s.count > 0) flush(c, s.count);
            s.limit = s.base;
        }
    }

    /**
     * Gives back what the owner has not needed since the last trim (jemalloc's tcache GC, here on the decay purges'
     * schedule): a class neither allocated nor freed since is flushed whole and goes back to its base; one in use that
     * grew halves towards its base (it grows again if it still runs one way), flushing its oldest regions that no
     * longer fit. Without it a thread that moved on from a class would keep its regions — and their chunks — for
     * good.
     */
    void trim() {
        for (int c = 0; c < CLASSES; c++) {
            Stack s = stacks[c];
            boolean idle = s.useSinceLastTrim() == 0;
            s.limit = idle ? s.base : Math.max(s.base, s.limit / 2);
            int excess = idle ? s.count : s.count - s.limit;
            if (excess > 0) flush(c, excess);
        }
    }

    /** Flushes a last time, exactly once whoever calls: after this the cache never serves again. */
    void retire() {
        if (RETIRED.compareAndSet(this, false, true)) flushAll();
    }

    boolean isRetired() {
        return retired;
    }

    /** Allocations of class {@code c} served here so far. */
    long allocations(int c) {
        return stacks[c].allocations();
    }

    /** Frees of class {@code c} taken back here so far. */
    long frees(int c) {
        return stacks[c].frees();
    }

    /** Allocations that had to refill first; every other allocation was a hit. */
    long misses() {
        return misses;
    }

    /** The slots class {@code c}'s stack uses now: its base, or more after it grew. */
    int slots(int c) {
        return stacks[c].limit;
    }

    /** Regions and page runs held here now. */
    long cached() {
        long n = 0;
        for (Stack s : stacks) n += s.count;
        return n;
    }

    /** Bytes of the page runs of large classes held here now (counted as used pages by their chunks). */
    long cachedLargeBytes() {
        long bytes = 0;
        for (int c = SizeClasses.SMALL_CLASSES; c < CLASSES; c++) {
            bytes += (long) stacks[c].count * SizeClasses.largePages(c) << SizeClasses.LOG2_PAGE;
        }
        return bytes;
    }
}
