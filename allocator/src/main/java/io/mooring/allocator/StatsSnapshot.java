package io.mooring.allocator;

import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The {@link ArenaStats} of {@link RdmaArena#stats()}: each part of the arena adds its own counters here by name
 * (thread caches, shards, the chunk source, the collector), and what follows from several parts — active and dirty
 * bytes — is derived from them.
 */
final class StatsSnapshot implements ArenaStats {
    private final Counts[] classes = new Counts[SizeClasses.SMALL_CLASSES];
    long largeAllocations;
    long largeFrees;
    long hugeAllocations;
    long hugeFrees;
    long registeredBytes;
    long chunks;
    long registrations;
    long deregistrations;
    long uncollectedFrees;
    long closedPinnedBlocks;
    long cacheHits;
    long cacheMisses;
    long cachedRegions;
    /** Bytes of the page runs held in thread caches: used pages to their chunks, yet not active. */
    long cachedLargeBytes;
    /** Bytes of the chunks of live huge blocks. */
    long hugeBytes;
    /** Pages of the shards' chunks, and of those the ones in use (by blocks, slabs and cached runs). */
    long chunkPages;
    long usedPages;
    /** Bytes of the shards' wholly free chunks. */
    long emptyChunkBytes;

    StatsSnapshot() {
        for (int c = 0; c < classes.length; c++) classes[c] = new Counts(SizeClasses.size(c));
    }

    /** Adds allocations of cached or small class {@code c}: a large class's count as large allocations. */
    void addAllocations(int c, long n) {
        if (c < SizeClasses.SMALL_CLASSES) classes[c].allocations += n;
        else largeAllocations += n;
    }

    /** Adds frees of cached or small class {@code c}: a large class's count as large frees. */
    void addFrees(int c, long n) {
        if (c < SizeClasses.SMALL_CLASSES) classes[c].frees += n;
        else largeFrees += n;
    }

    void addSlabs(int c, long n) {
        classes[c].slabs += n;
    }

    @Override
    public List<ClassStats> classes() {
        return List.of(classes);
    }

    @Override
    public long largeAllocations() {
        return largeAllocations;
    }

    @Override
    public long largeFrees() {
        return largeFrees;
    }

    @Override
    public long hugeAllocations() {
        return hugeAllocations;
    }

    @Override
    public long hugeFrees() {
        return hugeFrees;
    }

    @Override
    public long activeBytes() {
        long active = hugeBytes + (usedPages << SizeClasses.LOG2_PAGE) - cachedLargeBytes;
        for (int c = 0; c < classes.length; c++) {
            active += classes[c].live() * classes[c].size
                    - classes[c].slabs * ((long) SizeClasses.slabPages(c) << SizeClasses.LOG2_PAGE);
        }
        return active;
    }

    @Override
    public long registeredBytes() {
        return registeredBytes;
    }

    @Override
    public long retainedBytes() {
        return emptyChunkBytes;
    }

    @Override
    public long dirtyBytes() {
        return ((chunkPages - usedPages) << SizeClasses.LOG2_PAGE) - emptyChunkBytes;
    }

    @Override
    public long chunks() {
        return chunks;
    }

    @Override
    public long registrations() {
        return registrations;
    }

    @Override
    public long deregistrations() {
        return deregistrations;
    }

    @Override
    public long uncollectedFrees() {
        return uncollectedFrees;
    }

    @Override
    public long closedPinnedBlocks() {
        return closedPinnedBlocks;
    }

    @Override
    public long cacheHits() {
        return cacheHits;
    }

    @Override
    public long cacheMisses() {
        return cacheMisses;
    }

    @Override
    public long cachedRegions() {
        return cachedRegions;
    }

    @Override
    public String toString() {
        return "ArenaStats[liveBlocks=" + liveBlocks() + ", classes in use=" + Arrays.stream(classes)
                .filter(c -> c.allocations > 0).map(Counts::toString).collect(Collectors.joining(", ", "[", "]"))
                + ", largeAllocations=" + largeAllocations + ", largeFrees=" + largeFrees
                + ", hugeAllocations=" + hugeAllocations + ", hugeFrees=" + hugeFrees
                + ", activeBytes=" + activeBytes() + ", registeredBytes=" + registeredBytes
                + ", retainedBytes=" + retainedBytes() + ", dirtyBytes=" + dirtyBytes() + ", chunks=" + chunks
                + ", registrations=" + registrations + ", deregistrations=" + deregistrations
                + ", uncollectedFrees=" + uncollectedFrees + ", closedPinnedBlocks=" + closedPinnedBlocks
                + ", cacheHits=" + cacheHits + ", cacheMisses=" + cacheMisses
                + ", cachedRegions=" + cachedRegions + "]";
    }

    /** One small class's counters. */
    private static final class Counts implements ClassStats {
        final long size;
        long allocations;
        long frees;
        long slabs;

        Counts(long size) {
            this.size = size;
        }

        @Override
        public long size() {
            return size;
        }

        @Override
        public long allocations() {
            return allocations;
        }

        @Override
        public long frees() {
            return frees;
        }

        @Override
        public long slabs() {
            return slabs;
        }

        @Override
        public String toString() {
            return size + " B: " + allocations + " allocated, " + frees + " freed, " + slabs + " slabs";
        }
    }
}
