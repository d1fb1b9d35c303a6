package io.mooring.allocator;

/**
 * A platform thread's private stock of free small regions, per class, so that most allocations and frees
 * touch no lock (jemalloc's tcache). Bounded per class (at most {@code maxBytes / size} regions, between
 * {@value #MIN_SLOTS} and {@value #MAX_SLOTS}); a miss refills half of the slots from the shard's bin in one
 * locked step, and a full stack flushes half back the same way.
 *
 * <p>Only the owner touches it — except after the owner died (then the arena flushes it; thread termination
 * makes its last writes visible). Virtual threads get none: a cache per virtual thread would be unbounded in
 * total, and their frees are cheap enough through the bin.
 */
final class ThreadCache {
    static final int MIN_SLOTS = 4;
    static final int MAX_SLOTS = 64;

    final Shard shard;
    final Thread owner;
    private final long[][] addresses = new long[SizeClasses.SMALL_CLASSES][];
    private final Slab[][] slabs = new Slab[SizeClasses.SMALL_CLASSES][];
    private final int[] count = new int[SizeClasses.SMALL_CLASSES];
    final long[] allocations = new long[SizeClasses.SMALL_CLASSES]; // handed out from here
    final long[] frees = new long[SizeClasses.SMALL_CLASSES];       // given back to here
    long hits;
    long misses;
    int epoch; // the arena's flush epoch this cache last honoured
    Slab poppedSlab; // the slab of the region {@link #pop} returned last

    ThreadCache(Shard shard, Thread owner, long maxBytesPerClass) {
        this.shard = shard;
        this.owner = owner;
        for (int c = 0; c < SizeClasses.SMALL_CLASSES; c++) {
            int slots = (int) Math.clamp(maxBytesPerClass / SizeClasses.size(c), MIN_SLOTS, MAX_SLOTS);
            addresses[c] = new long[slots];
            slabs[c] = new Slab[slots];
        }
    }

    /**
     * Takes a cached region of class {@code c} (refilling from the bin when empty): returns its address and
     * leaves its slab in {@link #poppedSlab} — two results without allocating a holder on the fast path.
     */
    long pop(int c) {
        if (count[c] == 0) {
            refill(c);
        } else {
            hits++;
        }
        int top = --count[c];
        poppedSlab = slabs[c][top];
        slabs[c][top] = null;
        allocations[c]++;
        return addresses[c][top];
    }

    private void refill(int c) {
        misses++;
        count[c] = shard.bins[c].refill(shard, addresses[c], slabs[c], addresses[c].length / 2 + 1);
    }

    /** Keeps a freed region of class {@code c}, flushing half of the stack to the bin when it is full. */
    void free(int c, Slab slab, long address) {
        if (count[c] == addresses[c].length) flush(c, addresses[c].length / 2);
        int top = count[c]++;
        addresses[c][top] = address;
        slabs[c][top] = slab;
        frees[c]++;
    }

    /** Returns the oldest {@code n} cached regions of class {@code c} to the bin. */
    private void flush(int c, int n) {
        shard.bins[c].giveBack(shard, addresses[c], slabs[c], n);
        int left = count[c] - n;
        System.arraycopy(addresses[c], n, addresses[c], 0, left);
        System.arraycopy(slabs[c], n, slabs[c], 0, left);
        java.util.Arrays.fill(slabs[c], left, count[c], null);
        count[c] = left;
    }

    /** Returns everything to the bins (on demand, on the arena's flush epoch, or after the owner died). */
    void flushAll() {
        for (int c = 0; c < count.length; c++) if (count[c] > 0) flush(c, count[c]);
    }

    /** Regions held here now. */
    long cached() {
        long n = 0;
        for (int k : count) n += k;
        return n;
    }
}
