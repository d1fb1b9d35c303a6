package io.mooring.verbs.soft;

import io.mooring.verbs.ScatterGatherList;

/** The scatter/gather entries of one work request, copied at post time into preallocated arrays. */
final class Sges {
    final long[] address = new long[ScatterGatherList.CAPACITY];
    final int[] length = new int[ScatterGatherList.CAPACITY];
    final int[] lkey = new int[ScatterGatherList.CAPACITY];
    int count;

    void copyFrom(ScatterGatherList sgl) {
        count = sgl.count();
        for (int i = 0; i < count; i++) {
            address[i] = sgl.address(i);
            length[i] = sgl.length(i);
            lkey[i] = sgl.lkey(i);
        }
    }

    void copyFrom(Sges other) {
        count = other.count;
        System.arraycopy(other.address, 0, address, 0, count);
        System.arraycopy(other.length, 0, length, 0, count);
        System.arraycopy(other.lkey, 0, lkey, 0, count);
    }

    long totalLength() {
        long total = 0;
        for (int i = 0; i < count; i++) total += length[i];
        return total;
    }
}
