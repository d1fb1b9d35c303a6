package io.mooring.allocator;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;

/**
 * The arena core (jemalloc's "arena", Netty's {@code PoolArena}): one of the independent allocators threads are
 * spread over, with its own chunks, page runs and bins, so threads assigned to different shards never contend. It
 * serves a request from the caller's thread cache when the class is cached, else from a bin (small), a page run
 * (large) or a chunk of its own (huge), and takes every kind back. Page runs and the chunk list are guarded by
 * {@link #lock}; each bin has its own lock.
 */
final class Shard {
    final ChunkSource chunks;
    final Bin[] bins = new Bin[SizeClasses.SMALL_CLASSES];
    /** Requests of at least this many bytes get a chunk of their own. */
    private final long hugeThreshold;
    private final ReentrantLock lock = new ReentrantLock();
    private final List<Chunk> ownChunks = new ArrayList<>(); // guarded by lock
    private long largeAllocations;                           // guarded by lock
    private long largeFrees;                                 // guarded by lock
    private final AtomicLong hugeAllocations = new AtomicLong();
    private final AtomicLong hugeFrees = new AtomicLong();
    private final AtomicLong hugeBytes = new AtomicLong();

    Shard(ChunkSource chunks, long hugeThreshold) {
        this.chunks = chunks;
        this.hugeThreshold = hugeThreshold;
        for (int i = 0; i < bins.length; i++) bins[i] = new Bin(i);
    }

    // ---- blocks ----------------------------------------------------------------------------------------------

    /**
     * A block for {@code caller}, whose request the arena checked: from its thread cache if the class is cached, else
     * from this shard. {@code scope} is the block's shared scope, or null.
     */
    Block allocate(Caller caller, long size, long alignment, Arena scope) {
        // A small class's regions are aligned to the largest power of two dividing its size (up to a page);
        // every page run is page aligned.
        long aligned = alignment > SizeClasses.QUANTUM ? (size + alignment - 1) & -alignment : size;
        boolean small = aligned <= SizeClasses.SMALL_MAX && alignment <= SizeClasses.PAGE_SIZE;
        ThreadCache cache = caller.cache != null ? caller.cache : caller.magazine != null ? caller.magazine.cache : null;
        if (small || (cache != null && size <= cache.maxSize && alignment <= SizeClasses.PAGE_SIZE)) {
            int c = SizeClasses.indexOf(small ? aligned : size);
            if (caller.cache != null) {
                cache = caller.arena.threads.current(cache);
                if (cache != null) return cache.allocate(caller, c, size, scope);
            } else if (cache != null) {
                Block b = caller.arena.threads.allocateFromMagazine(caller, c, size, scope);
                if (b != null) return b;
            }
            if (small) {
                return bins[c].allocate(this, (slab, address) ->
                        new Block(caller, slab, address, size, scope));
            }
        }
        if (size >= hugeThreshold) return allocateHuge(caller, size, alignment, scope);
        return allocateLarge(caller, size, Math.max(alignment, SizeClasses.PAGE_SIZE), scope);
    }

    private Block allocateLarge(Caller caller, long size, long alignment, Arena scope) {
        int pages = (int) (SizeClasses.largeSize(size) >>> SizeClasses.LOG2_PAGE);
        Run r;
        lock.lock();
        try {
            r = takeRun(pages, alignment);
            largeAllocations++;
        } finally {
            lock.unlock();
        }
        return new Block(caller, r.chunk, r.chunk.address(r.page), size, scope);
    }

    private Block allocateHuge(Caller caller, long size, long alignment, Arena scope) {
        long bytes = (size + SizeClasses.PAGE_SIZE - 1) & -(long) SizeClasses.PAGE_SIZE;
        Chunk c = chunks.mapHuge(bytes, Math.max(alignment, SizeClasses.PAGE_SIZE), this);
        hugeAllocations.incrementAndGet();
        hugeBytes.addAndGet(bytes);
        return new Block(caller, c, c.base, size, scope);
    }

    /**
     * Takes a block back into its slab's bin or its chunk's free runs; a huge block's chunk is released. Only the
     * block's own shard ({@link Block#shard()}): its locks guard the slab and the chunk.
     */
    void free(Block b) {
        Slab slab = b.slab();
        Chunk chunk = b.chunk();
        if (slab != null) {
            bins[slab.classIndex].free(this, slab, b.address());
        } else if (chunk.huge) {
            hugeFrees.incrementAndGet();
            hugeBytes.addAndGet(-chunk.size);
            chunks.release(chunk);
        } else {
            freeRun(chunk, b.firstPage(), b.pages(), true);
        }
    }

    // ---- page runs -------------------------------------------------------------------------------------------

    private record Run(Chunk chunk, int page) {}

    /** A page run from an existing chunk, or from a new one if none has room. Caller holds the lock. */
    private Run takeRun(int pages, long alignment) {
        for (Chunk c : ownChunks) {
            int page = c.allocate(pages, alignment);
            if (page >= 0) return new Run(c, page);
        }
        Chunk c = chunks.map(this);
        ownChunks.add(c);
        return new Run(c, c.allocate(pages, alignment));
    }

    Slab newSlab(int classIndex) {
        int pages = SizeClasses.slabPages(classIndex);
        lock.lock();
        try {
            Run r = takeRun(pages, SizeClasses.PAGE_SIZE);
            return new Slab(r.chunk, r.page, pages, classIndex);
        } finally {
            lock.unlock();
        }
    }

    void freeSlab(Slab s) {
        freeRun(s.chunk, s.firstPage, s.pages, false);
    }

    /** One page run of {@code pages} for a thread cache (not counted as a large allocation: the cache counts). */
    int refillRun(int pages, long[] addresses, Object[] homes) {
        lock.lock();
        try {
            Run r = takeRun(pages, SizeClasses.PAGE_SIZE);
            addresses[0] = r.chunk.address(r.page);
            homes[0] = r.chunk;
            return 1;
        } finally {
            lock.unlock();
        }
    }

    /** Frees the page runs {@code from .. to - 1} of a thread cache's arrays (a flush) in one locked step. */
    void flushRuns(int pages, long[] addresses, Object[] homes, int from, int to) {
        List<Chunk> released = new ArrayList<>(0);
        lock.lock();
        try {
            for (int i = from; i < to; i++) {
                Chunk c = (Chunk) homes[i];
                if (freeRunLocked(c, c.page(addresses[i]), pages)) released.add(c);
            }
        } finally {
            lock.unlock();
        }
        released.forEach(chunks::release);
    }

    private void freeRun(Chunk c, int page, int pages, boolean large) {
        boolean release;
        lock.lock();
        try {
            if (large) largeFrees++;
            release = freeRunLocked(c, page, pages);
        } finally {
            lock.unlock();
        }
        if (release) chunks.release(c);
    }

    /** Frees a run; true if its chunk became empty while the arena closes, so must be released. Under the lock. */
    private boolean freeRunLocked(Chunk c, int page, int pages) {
        c.free(page, pages);
        if (!c.isEmpty()) return false;
        c.emptySinceNanos = System.nanoTime();
        if (!chunks.isClosing()) return false;
        ownChunks.remove(c);
        return true;
    }

    /** Lets each bin go of the slab it keeps for reuse if that is wholly free (purging, closing). */
    void trimBins() {
        for (Bin bin : bins) bin.trim(this);
    }

    /**
     * Removes and returns the chunks that are wholly free and pass {@code shouldRelease} (purging, closing).
     */
    List<Chunk> takeEmptyChunks(Predicate<Chunk> shouldRelease) {
        List<Chunk> taken = new ArrayList<>();
        lock.lock();
        try {
            for (var it = ownChunks.iterator(); it.hasNext(); ) {
                Chunk c = it.next();
                if (c.isEmpty() && shouldRelease.test(c)) {
                    it.remove();
                    taken.add(c);
                }
            }
        } finally {
            lock.unlock();
        }
        return taken;
    }

    // ---- stats -----------------------------------------------------------------------------------------------

    /** Adds the blocks handed out here directly (not through a thread cache). */
    void countAllocations(StatsSnapshot s) {
        for (Bin bin : bins) s.addAllocations(bin.classIndex, bin.allocations());
        s.largeAllocations += Locks.read(lock, () -> largeAllocations);
        s.hugeAllocations += hugeAllocations.get();
    }

    /** Adds the blocks freed here directly. */
    void countFrees(StatsSnapshot s) {
        for (Bin bin : bins) s.addFrees(bin.classIndex, bin.frees());
        s.largeFrees += Locks.read(lock, () -> largeFrees);
        s.hugeFrees += hugeFrees.get();
    }

    /** Adds the memory in use: slabs, chunk pages, huge chunks. */
    void countMemory(StatsSnapshot s) {
        for (Bin bin : bins) s.addSlabs(bin.classIndex, bin.slabs());
        s.hugeBytes += hugeBytes.get();
        lock.lock();
        try {
            for (Chunk c : ownChunks) {
                s.chunkPages += c.pages;
                s.usedPages += c.usedPages();
                if (c.isEmpty()) s.emptyChunkBytes += c.size;
            }
        } finally {
            lock.unlock();
        }
    }
}
