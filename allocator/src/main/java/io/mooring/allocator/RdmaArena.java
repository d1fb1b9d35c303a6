package io.mooring.allocator;

import io.mooring.allocator.internal.NativeAccess;
import io.mooring.lifecycle.ClosePolicy;
import io.mooring.lifecycle.Housekeeper;
import io.mooring.lifecycle.Resource;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.values.Access;
import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A jemalloc-style allocator of registered memory: a few large chunks are registered once with the protection
 * domain, and blocks are sliced out of them with no system call — so 1 GiB of 4 KiB blocks costs 16
 * registrations of 64 MiB chunks, not 262,144.
 * <pre>{@code
 * var arena = RdmaArena.builder(pd).access(EnumSet.of(LOCAL_WRITE, REMOTE_READ)).build();
 * try (Block block = arena.allocate(layout)) {
 *     block.segment().set(JAVA_LONG, 0, 42);
 *     qp.post(WorkRequest.send(block.region(), block.regionOffset(), 8));
 * }
 * }</pre>
 *
 * <p>Requests up to 16 KiB come from slabs of equal regions ({@link SizeClasses}), larger ones from page runs
 * of a chunk, and requests from the huge threshold on get a chunk of their own. Threads are spread over
 * several shards, each with its own chunks and locks. Wholly free chunks beyond the retained amount are
 * deregistered and unmapped after the decay time. Thread-safe.
 *
 * <p>This class is the façade; the parts, each in its own class: {@code Shard}, the arena core (bins, page runs,
 * huge chunks); {@code ThreadBinding}, how a thread finds its state and cache; {@code ThreadCache}; {@code
 * MtFreeCollector}, which collects blocks closed by other threads than their owner; {@code ChunkSource}, the
 * chunks' registration, release and purge; {@code StatsSnapshot}, the {@link ArenaStats} the parts fill.
 */
public final class RdmaArena implements AutoCloseable {
    /** Huge pages for chunk memory. */
    public enum HugePages {
        /** Normal pages. */
        OFF,
        /** {@code madvise(MADV_HUGEPAGE)}: transparent huge pages where the kernel has them. */
        TRANSPARENT,
        /** {@code MAP_HUGETLB}: reserved huge pages ({@code vm.nr_hugepages}); allocation fails without them. */
        RESERVED
    }

    private static final AtomicInteger NAMES = new AtomicInteger();
    /** Bit {@code a} set for each alignment {@code a} the fast path serves: the powers of two up to the quantum. */
    private static final long QUANTUM_ALIGNMENTS = 1L << 1 | 1L << 2 | 1L << 4 | 1L << 8 | 1L << SizeClasses.QUANTUM;

    private final long chunkSize;
    /** Whether blocks are confined to their holder (unless shared); read by each block, not stored in it. */
    final boolean checked;
    private final String name;
    private final long maxMrSize;
    private final Resource resource;
    private final ChunkSource chunks;
    private final Shard[] shards;
    final ThreadBinding threads;
    final MtFreeCollector collector;
    /** Blocks closed while pinned whose memory waits for their last unpin (see {@link Block#pin}). */
    final AtomicLong closedPinned = new AtomicLong();
    private final Housekeeper.Task purging;

    private RdmaArena(Builder b) {
        this.chunkSize = b.chunkSize;
        long hugeThreshold = b.hugeThreshold > 0 ? b.hugeThreshold : b.chunkSize / 2;
        this.checked = b.checked;
        this.name = b.name != null ? b.name : "arena-" + NAMES.incrementAndGet();
        this.maxMrSize = b.pd.context().device().attributes().maxMrSize();
        this.resource = b.pd.resource().createChild("arena", name, () -> {});
        this.chunks = new ChunkSource(b.pd, b.access, chunkSize, b.hugePages, b.decay.toNanos(), b.retainedBytes, name,
                resource);
        this.shards = new Shard[b.shards];
        for (int i = 0; i < shards.length; i++) shards[i] = new Shard(chunks, hugeThreshold);
        this.threads = new ThreadBinding(this, shards, b.cacheBytesPerClass,
                Math.min(ThreadCache.LARGE_MAX, hugeThreshold - 1));
        this.collector = new MtFreeCollector(threads);
        var self = new WeakReference<>(this); // the scheduler must not keep a dropped arena alive
        this.purging = chunks.scheduleDecayPurges(() -> {
            RdmaArena arena = self.get();
            if (arena != null) arena.purgeExpired();
        });
    }

    public static Builder builder(ProtectionDomain pd) {
        return new Builder(pd);
    }

    // ---- allocation ------------------------------------------------------------------------------------------

    /** A block of {@code size} bytes, 16-byte aligned (small) or page aligned (large). */
    public Block allocate(long size) {
        return allocate(size, 1);
    }

    /**
     * A block of {@code size} bytes at an address that is a multiple of {@code alignment}.
     *
     * @throws IllegalArgumentException if size is not positive or above the device's max MR size, or alignment
     *                                  is not a power of two or exceeds the chunk size
     */
    public Block allocate(long size, long alignment) {
        // The fast path — a class the caller's cache serves, needing no more than the quantum's alignment — is kept
        // small, for the JIT to inline it into the caller: a block used and closed in one method can then live in
        // registers. It is written once for both kinds of thread (a platform thread's own cache; a virtual thread's
        // shard magazine, held by one CAS) so that the cache's allocate and the Block's construction are compiled
        // once: with two copies a virtual thread's path compiled past C2's InlineSmallCode and was never inlined.
        Caller caller = threads.caller();
        Magazine magazine = caller.magazine;
        ThreadCache cache = magazine == null ? caller.cache : magazine.cache;
        if (cache != null && Long.compareUnsigned(size - 1, cache.maxSize) < 0 // 0 < size <= cache.maxSize
                && Long.compareUnsigned(alignment, SizeClasses.QUANTUM) <= 0
                && (QUANTUM_ALIGNMENTS >>> alignment & 1) != 0
                && !caller.hasMtFrees() && (magazine == null || magazine.tryHold())) {
            try {
                if (cache.epoch == threads.epoch()) {
                    resource.checkOpen(); // not implied by the epoch: closing the graph unmaps chunks without close()
                    return cache.allocate(caller, SizeClasses.indexOf(size), size, null);
                }
            } finally {
                if (magazine != null) {
                    magazine.letGo();
                    threads.countTowardsPromotion(caller);
                }
            }
        }
        return allocate(caller, size, alignment, false);
    }

    /** A block for {@code layout}: its size and alignment. */
    public Block allocate(MemoryLayout layout) {
        return allocate(layout.byteSize(), layout.byteAlignment());
    }

    /**
     * A checked block usable from every thread: its segment has a shared scope, whose close costs a handshake
     * with every thread (tens of microseconds). For blocks handed between threads in a checked arena.
     */
    public Block allocateShared(long size, long alignment) {
        return allocate(threads.caller(), size, alignment, true);
    }

    private Block allocate(Caller caller, long size, long alignment, boolean shared) {
        checkRequest(size, alignment);
        if (threads.cachesRetired()) catchUpCallingThread();
        resource.checkOpen();
        if (caller.hasMtFrees()) collector.collectOwn(caller);
        Arena scope = shared ? Arena.ofShared() : null; // a confined one comes with segment()
        Block b;
        try {
            b = caller.shard.allocate(caller, size, alignment, scope);
        } catch (RuntimeException | Error e) {
            if (scope != null) scope.close();
            throw e;
        }
        // A virtual thread whose magazine others hold is busy too: it needs a cache of its own the most. (One that
        // found a flush requested counted on the fast path already: once more per flush or purge is no harm.)
        if (caller.magazine != null) threads.countTowardsPromotion(caller);
        return b;
    }

    private void checkRequest(long size, long alignment) {
        if (size <= 0) throw new IllegalArgumentException("block size must be > 0, was " + size);
        if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
            throw new IllegalArgumentException("alignment must be a power of two, was " + alignment);
        }
        if (alignment > chunkSize) {
            throw new IllegalArgumentException("alignment " + alignment + " exceeds the chunk size " + chunkSize
                    + " (chunks are aligned to their size)");
        }
        if (size > maxMrSize) {
            throw new IllegalArgumentException("block size " + size + " exceeds the device's max MR size " + maxMrSize);
        }
    }

    /**
     * The calling thread collects its mt frees and honours a flush (or the retirement) asked of its cache: the owner's
     * part of a flush or a close, done at its next call.
     */
    private void catchUpCallingThread() {
        Caller me = threads.existingCaller();
        if (me != null) {
            collector.collectOwn(me);
            threads.current(me.cache);
        }
    }

    /**
     * Asks every thread to flush its cache (free its cached regions into the shard) at its next call into the arena,
     * and does it now for the virtual threads' magazines and the calling thread (collecting the blocks other threads
     * closed for it, too). Caches of threads that never call again are flushed when those threads end.
     */
    public void flushThreadCaches() {
        threads.requestFlush();
        threads.honourMagazines();
        catchUpCallingThread();
        collector.collectAndRetry();
    }

    // ---- purging ---------------------------------------------------------------------------------------------

    /**
     * Releases every wholly free chunk beyond the retained amount now, whatever the decay time, and asks thread caches
     * to trim — give back the classes they left idle since the previous purge — at their owners' next calls.
     */
    public void purge() {
        purge(false);
    }

    private void purgeExpired() {
        if (!chunks.isClosing()) purge(true);
    }

    private synchronized void purge(boolean expiredOnly) {
        threads.requestTrim(); // thread caches give back their idle classes at their owners' next calls
        threads.honourMagazines();
        collector.collectAndRetry();
        chunks.purge(shards, expiredOnly);
    }

    // ---- stats and closing -----------------------------------------------------------------------------------

    /**
     * A snapshot of the counters, taken while allocation goes on. Every allocation counter is read before any free
     * counter, and owners publish their counts with release stores: a block counted freed was counted allocated
     * too, unless both happened during the snapshot. So live counts never exceed what was live at some moment
     * during the snapshot (calls in flight can only make them lower) — which a STRICT {@link #close()} relies on.
     */
    public ArenaStats stats() {
        synchronized (collector.lock()) {
            var s = new StatsSnapshot();
            threads.countAllocations(threads.liveCaches(), s);
            for (Shard shard : shards) shard.countAllocations(s);
            // The caches again: one made since (a thread's first call) may have freed blocks the shards counted
            // allocated. None leaves meanwhile: an ended owner's counts move to the ended ones under this lock.
            List<ThreadCache> caches = threads.liveCaches();
            threads.countFrees(caches, s);
            for (Shard shard : shards) shard.countFrees(s);
            threads.countHeld(caches, s);
            for (Shard shard : shards) shard.countMemory(s);
            chunks.count(s);
            s.uncollectedFrees = collector.uncollected();
            s.closedPinnedBlocks = closedPinned.get();
            return s;
        }
    }

    /** The arena's place in the lifecycle graph (a child of its PD; its chunks' memory are its children). */
    public Resource resource() {
        return resource;
    }

    /** The rights every chunk region of this arena is registered with. */
    public Set<Access> access() {
        return chunks.access();
    }

    public String name() {
        return name;
    }

    /**
     * Closes the arena: no more allocations. Under the graph's DEFERRED policy (the default) chunks are
     * released as their last blocks are closed; under STRICT, live blocks make this throw
     * {@link ArenaBusyException} with the live counts per class and the arena stays open.
     *
     * <p>Thread caches are retired (flushed a last time) here: this thread's, and those of threads that have ended or
     * are between calls into the arena. A thread inside the allocator at that moment retires its cache at its next
     * call, or the collector does once it has left, a few milliseconds later. So once this returns, every chunk
     * without a live or uncollected block is deregistered and unmapped (or is as soon as the graph lets it: a
     * posted work request holds its region); the others go with their last block. Blocks closed by other threads
     * after this are still collected (see {@link Block}).
     *
     * <p>Under STRICT a chunk still held by a posted work request (one naming a block closed before it completed)
     * keeps the arena's place in the graph open, as any child waiting for its pins does: this throws the graph's
     * {@link io.mooring.lifecycle.ResourceBusyException} naming it, and a later call closes it once the request
     * completed. Meanwhile caches stay retired, and each chunk is released as soon as it is wholly free.
     */
    @Override
    public synchronized void close() {
        if (chunks.isClosing()) {
            resource.close(); // idempotent; under STRICT a retry, once the chunks that held it up are gone
            return;
        }
        collector.collect(); // blocks closed elsewhere that are free to go are not live: free them before counting
        if (resource.graph().policy() == ClosePolicy.STRICT) {
            ArenaStats s = stats();
            if (s.liveBlocks() > 0) throw new ArenaBusyException(name, s);
        }
        chunks.beginClose();
        threads.retireCaches(); // after the chunks' closing: an owner that sees its cache retired sees that too
        purging.cancel();
        catchUpCallingThread();
        boolean ownerBusy = collector.collect(); // the caches of owners between calls come back now, before the chunks go
        chunks.releaseEmpty(shards);
        if (ownerBusy) collector.schedule(); // before a STRICT refusal: the busy owners' caches still go
        resource.close();
    }

    /** Per-thread entries held now: threads with a cache, owners with blocks waiting on their mt-free list. */
    int threadStates() {
        return threads.ownersWithCache().size() + collector.ownersWaiting();
    }

    @Override
    public String toString() {
        return "RdmaArena[" + name + ", " + shards.length + " shards, chunk " + chunkSize + " B]";
    }

    /** Configures an arena. Every setting has a default; see each method. */
    public static final class Builder {
        private final ProtectionDomain pd;
        private Set<Access> access = EnumSet.of(Access.LOCAL_WRITE);
        private long chunkSize = 64L << 20;
        private long hugeThreshold;
        private HugePages hugePages = HugePages.OFF;
        private int shards = 2 * Runtime.getRuntime().availableProcessors();
        private boolean checked = true;
        private Duration decay = Duration.ofSeconds(10);
        private long retainedBytes;
        private long cacheBytesPerClass = 32 << 10;
        private String name;

        private Builder(ProtectionDomain pd) {
            this.pd = Objects.requireNonNull(pd, "pd");
        }

        /** Rights of the chunk regions (default LOCAL_WRITE only; add remote rights to expose blocks). */
        public Builder access(Set<Access> rights) {
            this.access = EnumSet.copyOf(rights);
            return this;
        }

        /** Bytes per chunk: a power of two from 1 MiB (default 64 MiB). */
        public Builder chunkSize(long bytes) {
            if (bytes < (1 << 20) || (bytes & (bytes - 1)) != 0) {
                throw new IllegalArgumentException("chunk size must be a power of two of at least 1 MiB, was " + bytes);
            }
            this.chunkSize = bytes;
            return this;
        }

        /**
         * Requests of at least this many bytes get a chunk of their own (default: half the chunk size). At most the
         * chunk size (checked by {@link #build()}): smaller requests are page runs of a chunk.
         */
        public Builder hugeThreshold(long bytes) {
            if (bytes <= SizeClasses.SMALL_MAX) {
                throw new IllegalArgumentException("huge threshold must exceed " + SizeClasses.SMALL_MAX + ", was " + bytes);
            }
            this.hugeThreshold = bytes;
            return this;
        }

        public Builder hugePages(HugePages mode) {
            this.hugePages = Objects.requireNonNull(mode, "mode");
            return this;
        }

        /** Independent shards (jemalloc's "arenas") threads are spread over (default 2 × cores). */
        public Builder shards(int n) {
            if (n < 1) throw new IllegalArgumentException("shards must be >= 1, was " + n);
            this.shards = n;
            return this;
        }

        /** Whether closed blocks' segments become inaccessible (default true). */
        public Builder checked(boolean on) {
            this.checked = on;
            return this;
        }

        /**
         * How long a wholly free chunk stays registered before it is purged (default 10 s). Purges run every half
         * decay, and trim the thread caches too (see {@link #threadCache}).
         */
        public Builder decay(Duration d) {
            if (d.isNegative()) throw new IllegalArgumentException("decay must not be negative, was " + d);
            this.decay = d;
            return this;
        }

        /** Bytes of wholly free chunks kept registered whatever the decay (default 0). */
        public Builder retainedBytes(long bytes) {
            if (bytes < 0) throw new IllegalArgumentException("retained bytes must be >= 0, was " + bytes);
            this.retainedBytes = bytes;
            return this;
        }

        /**
         * Bytes per class a platform thread keeps cached to start with (between 4 and 64 regions per small class;
         * default 32 KiB); a class the thread only allocates or only frees — one side of a hand-off — grows to 4
         * times that, at most 64 regions. Each purge halves it again at the thread's next call, and gives back whole
         * a class left idle since the previous purge (jemalloc's tcache GC): a thread keeps what it uses. 0 turns
         * thread caches off.
         */
        public Builder threadCache(long bytesPerClass) {
            if (bytesPerClass < 0) throw new IllegalArgumentException("thread cache bytes must be >= 0, was " + bytesPerClass);
            this.cacheBytesPerClass = bytesPerClass;
            return this;
        }

        public Builder name(String n) {
            this.name = Objects.requireNonNull(n, "name");
            return this;
        }

        /**
         * @throws IllegalArgumentException if the huge threshold exceeds the chunk size
         * @throws IllegalCallerException   naming the flag to add, if this JVM denies Mooring native access
         */
        public RdmaArena build() {
            // Below the threshold a request is a page run of one chunk: past the chunk size it would fit none.
            if (hugeThreshold > chunkSize) {
                throw new IllegalArgumentException("huge threshold " + hugeThreshold + " exceeds the chunk size "
                        + chunkSize + ": smaller requests are cut from a chunk, so none may be larger than one");
            }
            NativeAccess.require("the allocator calls the kernel through FFM (mmap, getpagesize)");
            return new RdmaArena(this);
        }
    }
}
