package io.mooring.allocator;

/**
 * A page run cut into equal regions of one small class, with a bitmap of the free ones. Slabs with free
 * regions form an intrusive list in their {@link Bin}. Guarded by the bin's lock.
 */
final class Slab {
    final Chunk chunk;
    final int firstPage;
    final int pages;
    final int classIndex;
    final long base;
    final int regionSize;
    final int regions;
    private final long[] freeBits;
    private int free;
    Slab prev; // in the bin's list of slabs with free regions
    Slab next;
    boolean listed;

    Slab(Chunk chunk, int firstPage, int pages, int classIndex) {
        this.chunk = chunk;
        this.firstPage = firstPage;
        this.pages = pages;
        this.classIndex = classIndex;
        this.base = chunk.address(firstPage);
        this.regionSize = (int) SizeClasses.size(classIndex);
        this.regions = (pages << SizeClasses.LOG2_PAGE) / regionSize;
        this.freeBits = new long[(regions + 63) >>> 6];
        for (int i = 0; i < regions; i++) freeBits[i >>> 6] |= 1L << i;
        this.free = regions;
    }

    int free() {
        return free;
    }

    /** Takes the lowest free region; the caller checked {@code free() > 0}. */
    long allocate() {
        for (int w = 0; w < freeBits.length; w++) {
            long bits = freeBits[w];
            if (bits != 0) {
                int bit = Long.numberOfTrailingZeros(bits);
                freeBits[w] = bits & ~(1L << bit);
                free--;
                return base + (long) ((w << 6) + bit) * regionSize;
            }
        }
        throw new IllegalStateException("slab of class " + regionSize + " B has no free region");
    }

    /**
     * Returns a region.
     *
     * @throws IllegalStateException if it is not a region start or already free (a double free)
     */
    void free(long address) {
        long offset = address - base;
        int index = (int) (offset / regionSize);
        if (offset < 0 || offset % regionSize != 0 || index >= regions) {
            throw new IllegalStateException("0x" + Long.toHexString(address) + " is not a region of this slab");
        }
        long bit = 1L << index;
        if ((freeBits[index >>> 6] & bit) != 0) {
            throw new IllegalStateException("region 0x" + Long.toHexString(address) + " is already free");
        }
        freeBits[index >>> 6] |= bit;
        free++;
    }
}
