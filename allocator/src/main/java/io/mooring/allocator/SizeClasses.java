package io.mooring.allocator;

/**
 * jemalloc's size classes: a 16-byte quantum, then four classes per doubling, so rounding a request up wastes
 * at most 20% (a request of {@code base + 1} gets {@code base + base/4}).
 *
 * <p>Derivation. Class {@code i} lies in group {@code g = i / 4} at step {@code n = i % 4 + 1}:
 * <pre>
 *   g = 0:        size = 16·n                                   16, 32, 48, 64
 *   g ≥ 1:        size = 2^(g+5) + n · 2^(g+3)                   80, 96, 112, 128 | 160, 192, 224, 256 | 320 ...
 * </pre>
 * so every group doubles its base and its step. The inverse, for a request {@code s > 64}: with
 * {@code x = floor(log2(s - 1))}, the group is {@code g = x - 5}, the step {@code 2^(x-2)} and
 * {@code n = ceil((s - 2^x) / 2^(x-2))}, hence {@code i = 4g + n - 1}. Requests up to
 * {@value #LOOKUP_MAX} bytes are answered from a table built by the same formula ({@link #indexOf} asserts
 * the two agree); larger ones are computed.
 *
 * <pre>
 *   index   0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15 ... 35     39     43
 *   size   16  32  48  64  80  96 112 128 160 192 224 256 320 384 448 512 ... 16 Ki  32 Ki  64 Ki
 * </pre>
 * Classes up to {@link #SMALL_MAX} are <em>small</em>: regions cut from slabs. Larger ones are <em>large</em>:
 * page runs, whose class sizes (from 32 KiB on) are already whole pages.
 */
final class SizeClasses {
    static final int LOG2_QUANTUM = 4;
    static final int QUANTUM = 1 << LOG2_QUANTUM;
    static final int PAGE_SIZE = 8192;
    static final int LOG2_PAGE = 13;
    /** The largest small class; its slabs still hold at least two regions within {@link #MAX_SLAB_PAGES}. */
    static final int SMALL_MAX = 16384;
    static final int MAX_SLAB_PAGES = 8;
    private static final int LOOKUP_MAX = 4096;

    private static final byte[] LOOKUP = new byte[LOOKUP_MAX >> LOG2_QUANTUM];
    static final int SMALL_CLASSES = computeIndex(SMALL_MAX) + 1;
    private static final int[] SLAB_PAGES = new int[SMALL_CLASSES];

    static {
        for (int i = 0; i < LOOKUP.length; i++) LOOKUP[i] = (byte) computeIndex((long) (i + 1) << LOG2_QUANTUM);
        for (int i = 0; i < SMALL_CLASSES; i++) SLAB_PAGES[i] = bestSlabPages(size(i));
    }

    private SizeClasses() {}

    /** The class of a request of {@code size} bytes (> 0). */
    static int indexOf(long size) {
        if (size <= LOOKUP_MAX) {
            int i = LOOKUP[(int) ((size - 1) >> LOG2_QUANTUM)];
            assert i == computeIndex(size) : "lookup table disagrees with the formula at " + size;
            return i;
        }
        return computeIndex(size);
    }

    static int computeIndex(long size) {
        if (size <= 64) return (int) ((size - 1) >> LOG2_QUANTUM);
        int x = 63 - Long.numberOfLeadingZeros(size - 1);
        long step = 1L << (x - 2);
        int n = (int) ((size - (1L << x) + step - 1) >>> (x - 2));
        return 4 * (x - 5) + n - 1;
    }

    /** The size of class {@code index}. */
    static long size(int index) {
        if (index < 4) return (long) (index + 1) << LOG2_QUANTUM;
        int g = index >> 2;
        int n = (index & 3) + 1;
        long base = 1L << (g + 5);
        return base + n * (base >> 2);
    }


    /** Pages per slab of a small class: the count up to {@link #MAX_SLAB_PAGES} that wastes least of the slab. */
    static int slabPages(int index) {
        return SLAB_PAGES[index];
    }

    private static int bestSlabPages(long regionSize) {
        int best = 1;
        double bestWaste = 1;
        for (int pages = 1; pages <= MAX_SLAB_PAGES; pages++) {
            long bytes = (long) pages * PAGE_SIZE;
            if (bytes < regionSize * 2) continue; // a slab of one region is a page run with extra steps
            double waste = (double) (bytes % regionSize) / bytes;
            if (waste < bestWaste) {
                best = pages;
                bestWaste = waste;
            }
            if (waste == 0) break;
        }
        return best;
    }

    /** Pages of a page run of large class {@code index}. */
    static int largePages(int index) {
        return (int) ((size(index) + PAGE_SIZE - 1) >>> LOG2_PAGE);
    }

    /** Bytes a large request occupies: its class size, in whole pages. */
    static long largeSize(long size) {
        long classSize = size(indexOf(size));
        return (classSize + PAGE_SIZE - 1) & -PAGE_SIZE;
    }
}
