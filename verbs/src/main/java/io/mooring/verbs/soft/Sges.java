package io.mooring.verbs.soft;

import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.SgeList;

/**
 * The scatter/gather entries of one work request, copied at post time, and how they reach local memory: each entry
 * through a region its lkey names, of the right protection domain, covering it. The first entry is kept in fields and
 * the rest in an array that grows to the most entries a request of its queue had: most requests have one, and a queue
 * keeps one of these per request it holds.
 */
final class Sges implements SgeList {
    private static final long[] NONE = {};

    int count;
    private long address0;
    private int length0;
    private int lkey0;
    private long[] more = NONE; // entries 1.. as pairs: the address, then the length << 32 | the lkey

    @Override
    public int count() {
        return count;
    }

    @Override
    public long address(int i) {
        return i == 0 ? address0 : more[2 * i - 2];
    }

    @Override
    public int length(int i) {
        return i == 0 ? length0 : (int) (more[2 * i - 1] >>> 32);
    }

    @Override
    public int lkey(int i) {
        return i == 0 ? lkey0 : (int) more[2 * i - 1];
    }

    void copyFrom(SgeList sgl) {
        count = sgl.count();
        reserve(count);
        for (int i = 0; i < count; i++) {
            if (i == 0) {
                address0 = sgl.address(0);
                length0 = sgl.length(0);
                lkey0 = sgl.lkey(0);
            } else {
                more[2 * i - 2] = sgl.address(i);
                more[2 * i - 1] = (long) sgl.length(i) << 32 | (sgl.lkey(i) & 0xFFFF_FFFFL);
            }
        }
    }

    /** Holds {@code count} (0 or 1) entries: the one given, if any. */
    void setSingle(int count, long address, int length, int lkey) {
        this.count = count;
        address0 = address;
        length0 = length;
        lkey0 = lkey;
    }

    void copyFrom(Sges other) {
        count = other.count;
        address0 = other.address0;
        length0 = other.length0;
        lkey0 = other.lkey0;
        reserve(count);
        if (count > 1) System.arraycopy(other.more, 0, more, 0, 2 * (count - 1));
    }

    /** Room for {@code n} entries: grown the first time a request has that many, never again after. */
    private void reserve(int n) {
        if (2 * (n - 1) > more.length) more = new long[2 * (n - 1)];
    }

    @Override
    public long totalLength() {
        long total = 0;
        for (int i = 0; i < count; i++) total += length(i);
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
            if (region(device, address(i), length(i), lkey(i), true, owner) == null) return false;
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
            SoftMr mr = region(device, address(i), length(i), lkey(i), false, owner);
            if (mr == null || !mr.copyOut(address(i), into, offset, length(i))) return -1;
            offset += length(i);
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
            int n = Math.min(length(i), length - offset);
            SoftMr mr = region(device, address(i), length(i), lkey(i), true, owner);
            if (mr == null || !mr.copyIn(address(i), data, offset, n)) return false;
            offset += n;
        }
        return true;
    }
}
