package io.mooring.verbs;

import io.mooring.verbs.values.SgeList;
import java.util.Arrays;

/**
 * The local buffers of a work request ({@code struct ibv_sge[]}): address, length and lkey per entry, in a
 * fixed-capacity array that a request reuses from post to post.
 *
 * <p>Entries added with a {@link MemoryRegion} are checked against its bounds and keep the region alive
 * until the request completes. {@link #addUnchecked} takes raw values, as {@code ibv_post_send} does: the NIC
 * checks them, and a bad one fails the request with LOC_PROT_ERR.
 */
public final class ScatterGatherList implements SgeList {
    // One entry first, grown up to CAPACITY by the requests that need more: a session keeps requests for reuse, and
    // almost every one of them has a single entry.
    private long[] address = new long[1];
    private int[] length = new int[1];
    private int[] lkey = new int[1];
    private MemoryRegion[] region = new MemoryRegion[1];
    private int count;

    ScatterGatherList() {}

    /**
     * Adds {@code length} bytes at {@code offset} inside {@code mr}.
     *
     * @throws IllegalArgumentException if the range is outside the region or the list is full
     */
    void add(MemoryRegion mr, long offset, int length) {
        if (offset < 0 || length < 0 || offset > mr.length() - length) {
            throw new IllegalArgumentException("scatter/gather entry [" + offset + ", +" + length + ") is outside "
                    + mr + " of " + mr.length() + " bytes");
        }
        put(mr.address() + offset, length, mr.lkey(), mr);
    }

    void addUnchecked(long address, int length, int lkey) {
        put(address, length, lkey, null);
    }

    private void put(long a, int len, int key, MemoryRegion mr) {
        if (count == address.length) grow();
        address[count] = a;
        length[count] = len;
        lkey[count] = key;
        region[count] = mr;
        count++;
    }

    private void grow() {
        if (count == CAPACITY) {
            throw new IllegalArgumentException("a work request holds at most " + CAPACITY + " scatter/gather entries");
        }
        int bigger = Math.min(CAPACITY, 2 * count);
        address = Arrays.copyOf(address, bigger);
        length = Arrays.copyOf(length, bigger);
        lkey = Arrays.copyOf(lkey, bigger);
        region = Arrays.copyOf(region, bigger);
    }

    void clear() {
        Arrays.fill(region, 0, count, null);
        count = 0;
    }

    public int count() {
        return count;
    }

    public long address(int i) {
        return address[check(i)];
    }

    public int length(int i) {
        return length[check(i)];
    }

    public int lkey(int i) {
        return lkey[check(i)];
    }

    /** The region entry {@code i} was added with, or null for an unchecked entry. */
    MemoryRegion region(int i) {
        return region[check(i)];
    }

    /** Sum of the entries' lengths. */
    public long totalLength() {
        long total = 0;
        for (int i = 0; i < count; i++) total += length[i];
        return total;
    }

    private int check(int i) {
        if (i < 0 || i >= count) throw new IndexOutOfBoundsException("entry " + i + " of " + count);
        return i;
    }
}
