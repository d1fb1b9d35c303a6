package io.mooring.allocator;

import io.mooring.lifecycle.Resource;
import io.mooring.verbs.MemoryRegion;
import java.util.TreeSet;

/**
 * One registered mapping, cut into pages and handed out as page runs (large blocks and slabs of small ones).
 * Free runs are kept coalesced and found best-fit; all of this is guarded by the owning shard's lock.
 *
 * <p>In the lifecycle graph the mapping ({@link #memory}, destroyed by {@code munmap}) is the parent of the
 * region registered over it, so the memory is unmapped only after the region was deregistered and no work
 * request holds it.
 */
final class Chunk {
    final long base;
    final long size;
    final int pages;
    final MemoryRegion region;
    final Resource memory;
    /** Whether it backs one huge block only (and is released with it). */
    final boolean huge;
    /** The shard that cut it: whose locks guard its runs and slabs, and to which its blocks are freed. */
    final Shard shard;

    private final TreeSet<Long> freeRuns = new TreeSet<>(); // (pages << 32 | start): best fit by ceiling
    private final int[] runLengthAt;                       // free run starting at page p: its length, else 0
    private final int[] runStartEndingAt;                  // free run ending at page p: its start + 1, else 0
    private int usedPages;
    long emptySinceNanos;                                  // when it last became wholly free

    Chunk(long base, long size, MemoryRegion region, Resource memory, boolean huge, Shard shard) {
        this.base = base;
        this.size = size;
        this.pages = (int) (size >>> SizeClasses.LOG2_PAGE);
        this.region = region;
        this.memory = memory;
        this.huge = huge;
        this.shard = shard;
        this.runLengthAt = new int[huge ? 0 : pages];
        this.runStartEndingAt = new int[huge ? 0 : pages];
        if (!huge) insert(0, pages);
        else usedPages = pages;
    }

    boolean isEmpty() {
        return usedPages == 0;
    }

    int usedPages() {
        return usedPages;
    }

    /**
     * Takes a run of {@code count} pages whose address is a multiple of {@code alignment} bytes.
     *
     * @return its first page, or -1 if no free run fits
     */
    int allocate(int count, long alignment) {
        int alignPages = (int) Math.max(1, alignment >>> SizeClasses.LOG2_PAGE);
        for (Long key : freeRuns.tailSet((long) count << 32)) {
            int start = (int) (long) key;
            int length = (int) (key >>> 32);
            int first = alignPages == 1 ? start : alignedPage(start, alignPages);
            if (first + count > start + length) continue;
            remove(start, length);
            if (first > start) insert(start, first - start);
            if (first + count < start + length) insert(first + count, start + length - first - count);
            usedPages += count;
            return first;
        }
        return -1;
    }

    private int alignedPage(int start, int alignPages) {
        long alignBytes = (long) alignPages << SizeClasses.LOG2_PAGE;
        long address = base + ((long) start << SizeClasses.LOG2_PAGE);
        long aligned = (address + alignBytes - 1) & -alignBytes;
        return (int) ((aligned - base) >>> SizeClasses.LOG2_PAGE);
    }

    /** Returns a run, merging it with free neighbours. */
    void free(int start, int count) {
        usedPages -= count;
        int end = start + count;
        if (start > 0 && runStartEndingAt[start - 1] != 0) {
            int prev = runStartEndingAt[start - 1] - 1;
            remove(prev, start - prev);
            start = prev;
        }
        if (end < pages && runLengthAt[end] != 0) {
            int next = runLengthAt[end];
            remove(end, next);
            end += next;
        }
        insert(start, end - start);
    }

    private void insert(int start, int length) {
        freeRuns.add((long) length << 32 | start);
        runLengthAt[start] = length;
        runStartEndingAt[start + length - 1] = start + 1;
    }

    private void remove(int start, int length) {
        freeRuns.remove((long) length << 32 | start);
        runLengthAt[start] = 0;
        runStartEndingAt[start + length - 1] = 0;
    }

    long address(int page) {
        return base + ((long) page << SizeClasses.LOG2_PAGE);
    }

    int page(long address) {
        return (int) ((address - base) >>> SizeClasses.LOG2_PAGE);
    }

    /**
     * Deregisters the region and unmaps the memory, each as soon as nothing holds it — whatever the graph's policy: a
     * posted request's pin (or a lease ending under the region) is a temporary hold, which STRICT defers as DEFERRED
     * does, but a plain close of the mapping would refuse under STRICT while its region waits, and leave it mapped.
     */
    void release() {
        region.resource().closeTree();
        memory.closeTree();
    }
}
