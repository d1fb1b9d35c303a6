package io.mooring.verbs.soft;

import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.SgeList;

/**
 * The scatter/gather entries of one work request, copied at post time into preallocated arrays, and how they reach
 * local memory: each entry through a region its lkey names, of the right protection domain, covering it.
 */
final class Sges {
    final long[] address = new long[SgeList.CAPACITY];
    final int[] length = new int[SgeList.CAPACITY];
    final int[] lkey = new int[SgeList.CAPACITY];
    int count;

    void copyFrom(SgeList sgl) {
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

    /** The region {@code lkey} names, if it covers {@code [address, +length)} and belongs to {@code owner}. */
    private static SoftMr region(SoftDevice device, long address, int length, int lkey, boolean write, SoftPd owner) {
        SoftMr mr = device.keys.region(lkey);
        if (mr == null) return null;
        boolean ok = mr.key == lkey && mr.pd == owner && mr.covers(address, length)
                && (!write || (mr.access & Access.LOCAL_WRITE.bit()) != 0);
        return ok ? mr : null;
    }

    /** Whether every entry is a locally writable region of {@code owner} (a READ's or an atomic's target). */
    boolean writable(SoftDevice device, SoftPd owner) {
        for (int i = 0; i < count; i++) {
            if (region(device, address[i], length[i], lkey[i], true, owner) == null) return false;
        }
        return true;
    }

    /**
     * Copies the entries' bytes into {@code into}, which holds {@link #totalLength()}; returns how many, or -1 if an
     * entry is not covered by a valid lkey of {@code owner}.
     */
    int gather(byte[] into, SoftDevice device, SoftPd owner) {
        int offset = 0;
        for (int i = 0; i < count; i++) {
            SoftMr mr = region(device, address[i], length[i], lkey[i], false, owner);
            if (mr == null || !mr.copyOut(address[i], into, offset, length[i])) return -1;
            offset += length[i];
        }
        return offset;
    }

    /**
     * Writes the first {@code length} bytes of {@code data} across the entries; false if an entry is not writable
     * through a valid lkey of {@code owner}.
     */
    boolean scatter(byte[] data, int length, SoftDevice device, SoftPd owner) {
        int offset = 0;
        for (int i = 0; i < count && offset < length; i++) {
            int n = Math.min(this.length[i], length - offset);
            SoftMr mr = region(device, address[i], this.length[i], lkey[i], true, owner);
            if (mr == null || !mr.copyIn(address[i], data, offset, n)) return false;
            offset += n;
        }
        return true;
    }
}
