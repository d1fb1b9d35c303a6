package io.mooring.allocator;

import io.mooring.lifecycle.Housekeeper;
import io.mooring.lifecycle.Resource;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.values.Access;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import jdk.jfr.FlightRecorder;

/**
 * The lifecycle of an arena's chunks: each is mapped and registered once ({@link #map}), lent to a shard (or to one
 * huge block), and released — deregistered, then unmapped — when a purge finds it wholly free for the decay time
 * beyond the retained amount, or at once once the arena is closing. Counts registrations and records each as a JFR
 * event.
 *
 * <p>In the lifecycle graph each mapping ({@code chunk-memory}, destroyed by {@code munmap}) is a child of the arena
 * and the parent of the region registered over it, so the memory is unmapped only after the region was deregistered
 * and no work request holds it, whatever order things are closed in.
 */
final class ChunkSource {
    private final ProtectionDomain pd;
    private final Set<Access> access;
    private final long chunkSize;
    private final RdmaArena.HugePages hugePages;
    private final long decayNanos;
    private final long retainedBytes;
    private final String arena;
    private final Resource arenaResource;
    private final AtomicLong registrations = new AtomicLong();
    private final AtomicLong deregistrations = new AtomicLong();
    private final AtomicLong registeredBytes = new AtomicLong();
    private final AtomicLong chunkCount = new AtomicLong();
    private volatile boolean closing;

    ChunkSource(ProtectionDomain pd, Set<Access> access, long chunkSize, RdmaArena.HugePages hugePages,
                long decayNanos, long retainedBytes, String arena, Resource arenaResource) {
        this.pd = pd;
        this.access = Set.copyOf(access);
        this.chunkSize = chunkSize;
        this.hugePages = hugePages;
        this.decayNanos = decayNanos;
        this.retainedBytes = retainedBytes;
        this.arena = arena;
        this.arenaResource = arenaResource;
    }

    /** The rights every chunk is registered with. */
    Set<Access> access() {
        return access;
    }

    long chunkSize() {
        return chunkSize;
    }

    /** A chunk for {@code shard} to cut into page runs: {@link #chunkSize()} bytes, aligned to its size. */
    Chunk map(Shard shard) {
        return map(chunkSize, chunkSize, false, shard);
    }

    /** A chunk of its own for one huge block of {@code shard}. */
    Chunk mapHuge(long bytes, long alignment, Shard shard) {
        return map(bytes, alignment, true, shard);
    }

    private Chunk map(long size, long alignment, boolean huge, Shard shard) {
        long base = NativeMemory.map(size, alignment, hugePages == RdmaArena.HugePages.RESERVED);
        if (hugePages == RdmaArena.HugePages.TRANSPARENT) NativeMemory.adviseHugePages(base, size);
        Resource memory = arenaResource.createChild("chunk-memory",
                "addr=0x" + Long.toHexString(base) + " len=" + size, () -> NativeMemory.unmap(base, size));
        var event = recording() ? ChunkEvent.begun() : null;
        MemoryRegion region;
        try {
            region = pd.register(NativeMemory.segment(base, size, null), access, memory);
        } catch (RuntimeException e) {
            memory.close();
            throw e;
        }
        registrations.incrementAndGet();
        registeredBytes.addAndGet(size);
        chunkCount.incrementAndGet();
        commit(event, "register", base, size, huge);
        return new Chunk(base, size, region, memory, huge, shard);
    }

    /** Deregisters and unmaps a chunk that no block uses any more (each as soon as nothing holds it). */
    void release(Chunk c) {
        var event = recording() ? ChunkEvent.begun() : null;
        c.release();
        deregistrations.incrementAndGet();
        registeredBytes.addAndGet(-c.size);
        chunkCount.decrementAndGet();
        commit(event, "release", c.base, c.size, c.huge);
    }

    // ---- purging ---------------------------------------------------------------------------------------------

    /** Runs {@code purgeExpired} every half decay on the {@link Housekeeper}, until the returned task is cancelled. */
    Housekeeper.Task scheduleDecayPurges(Runnable purgeExpired) {
        long period = Math.max(10, TimeUnit.NANOSECONDS.toMillis(decayNanos) / 2);
        return Housekeeper.shared().scheduleWithFixedDelay(purgeExpired, Duration.ofMillis(period));
    }

    /**
     * Releases the shards' chunks that have been wholly free for the decay time ({@code expiredOnly}) or for any
     * time, beyond the retained amount.
     */
    void purge(Shard[] shards, boolean expiredOnly) {
        trimBins(shards);
        long now = System.nanoTime(); // after the trim: a chunk it emptied is free from now on
        long minEmptyNanos = expiredOnly ? decayNanos : 0;
        long[] keep = {retainedBytes};
        List<Chunk> released = takeEmpty(shards, c -> {
            if (now - c.emptySinceNanos < minEmptyNanos) return false;
            if (keep[0] >= c.size) {
                keep[0] -= c.size;
                return false;
            }
            return true;
        });
        if (released.isEmpty()) return;
        var event = recording() ? PurgeEvent.begun() : null;
        long bytes = 0;
        for (Chunk c : released) {
            release(c);
            bytes += c.size;
        }
        if (event != null && event.shouldCommit()) {
            event.arena = arena;
            event.chunks = released.size();
            event.bytes = bytes;
            event.commit();
        }
    }

    /** From now on a chunk that becomes wholly free is released at once (see {@link #isClosing()}). */
    void beginClose() {
        closing = true;
    }

    /** Releases every wholly free chunk of the shards, whatever the decay and the retained amount (closing). */
    void releaseEmpty(Shard[] shards) {
        trimBins(shards);
        takeEmpty(shards, c -> true).forEach(this::release);
    }

    /** Lets the bins go of the slabs they keep for reuse, so that their chunks may become wholly free. */
    private static void trimBins(Shard[] shards) {
        for (Shard s : shards) s.trimBins();
    }

    private static List<Chunk> takeEmpty(Shard[] shards, Predicate<Chunk> shouldRelease) {
        List<Chunk> taken = new ArrayList<>();
        for (Shard s : shards) taken.addAll(s.takeEmptyChunks(shouldRelease));
        return taken;
    }

    /** Whether the arena is closing: its shards then release a chunk as soon as it is wholly free. */
    boolean isClosing() {
        return closing;
    }

    // ---- stats and events ------------------------------------------------------------------------------------

    /** Adds the registrations and the chunks registered now. */
    void count(StatsSnapshot s) {
        s.registrations = registrations.get();
        s.deregistrations = deregistrations.get();
        s.registeredBytes = registeredBytes.get();
        s.chunks = chunkCount.get();
    }

    /**
     * Whether JFR is initialized. Checked before an event class is touched: initializing one registers it, which
     * initializes JFR — about half a second for a JVM that records nothing.
     */
    private static boolean recording() {
        return FlightRecorder.isInitialized();
    }

    private void commit(ChunkEvent event, String action, long address, long size, boolean huge) {
        if (event == null || !event.shouldCommit()) return;
        event.arena = arena;
        event.action = action;
        event.address = address;
        event.size = size;
        event.huge = huge;
        event.commit();
    }
}
