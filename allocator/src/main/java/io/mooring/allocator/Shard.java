package io.mooring.allocator;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import java.util.function.Predicate;

/**
 * One of the arena's independent allocators (jemalloc's "arena"): its own chunks, page runs and bins, so
 * threads assigned to different shards never contend. Page runs and the chunk list are guarded by
 * {@link #lock}; each bin has its own lock.
 */
final class Shard {
    final RdmaArena arena;
    final ChunkSource chunks;
    final Bin[] bins = new Bin[SizeClasses.SMALL_CLASSES];
    private final ReentrantLock lock = new ReentrantLock();
    private final List<Chunk> ownChunks = new ArrayList<>(); // guarded by lock
    private long largeAllocations;                        // guarded by lock
    private long largeFrees;                              // guarded by lock

    Shard(RdmaArena arena, ChunkSource chunks) {
        this.arena = arena;
        this.chunks = chunks;
        for (int i = 0; i < bins.length; i++) bins[i] = new Bin(i);
    }

    private record Run(Chunk chunk, int page) {}

    /** A page run from an existing chunk, or from a new one if none has room. Caller holds the lock. */
    private Run takeRun(int pages, long alignment) {
        for (Chunk c : ownChunks) {
            int page = c.allocate(pages, alignment);
            if (page >= 0) return new Run(c, page);
        }
        Chunk c = chunks.map();
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

    void releaseSlab(Slab s) {
        freeRun(s.chunk, s.firstPage, s.pages, false);
    }

    Block allocateLarge(long bytes, long alignment, LargeFactory make) {
        int pages = (int) (bytes >>> SizeClasses.LOG2_PAGE);
        lock.lock();
        try {
            Run r = takeRun(pages, alignment);
            largeAllocations++;
            return make.block(r.chunk, r.page);
        } finally {
            lock.unlock();
        }
    }

    /** Creates the block for a page run just taken. */
    interface LargeFactory {
        Block block(Chunk chunk, int page);
    }

    void freeLarge(Chunk c, int page, int pages) {
        freeRun(c, page, pages, true);
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

    /** Takes back the first {@code n} page runs of a thread cache's arrays in one locked step. */
    void giveBackRuns(int pages, long[] addresses, Object[] homes, int n) {
        List<Chunk> released = new ArrayList<>(0);
        lock.lock();
        try {
            for (int i = 0; i < n; i++) {
                Chunk c = (Chunk) homes[i];
                if (returnRun(c, c.page(addresses[i]), pages)) released.add(c);
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
            release = returnRun(c, page, pages);
        } finally {
            lock.unlock();
        }
        if (release) chunks.release(c);
    }

    /** Frees a run; true if its chunk became empty while the arena closes, so must be released. Under the lock. */
    private boolean returnRun(Chunk c, int page, int pages) {
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

    /** Chunks counted for stats: [chunks, empty chunks, used pages]. */
    long[] chunkCounters() {
        lock.lock();
        try {
            long empty = ownChunks.stream().filter(Chunk::isEmpty).count();
            long used = ownChunks.stream().mapToLong(Chunk::usedPages).sum();
            return new long[] {ownChunks.size(), empty, used};
        } finally {
            lock.unlock();
        }
    }

    /** Page-run blocks handed out directly (not through a thread cache), for stats. */
    long largeAllocations() {
        return underLock(() -> largeAllocations);
    }

    /** Page-run blocks given back directly, for stats. */
    long largeFrees() {
        return underLock(() -> largeFrees);
    }

    private long underLock(LongSupplier counter) {
        lock.lock();
        try {
            return counter.getAsLong();
        } finally {
            lock.unlock();
        }
    }
}
