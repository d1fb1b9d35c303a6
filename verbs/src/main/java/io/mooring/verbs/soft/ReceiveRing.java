package io.mooring.verbs.soft;

import io.mooring.verbs.values.SgeList;
import java.util.Arrays;

/**
 * The posted receives of a receive queue (a QP's or a shared one), kept as a NIC keeps them: a ring of plain values
 * — each receive's id and its scatter entries — rather than an object per receive, since every session keeps a window
 * of receives posted and an endpoint's sessions are many. The first entry of each receive sits in flat arrays;
 * receives with more entries (rare) keep the rest in a side array made for them. The ring grows, up to the queue's
 * depth, to the most receives posted at once. Not thread-safe: its owner guards it.
 */
final class ReceiveRing {
    /** The slots a ring starts with. */
    private static final int FIRST = 2;

    private final int depth;
    private final SoftPd pd; // the protection domain the receives' lkeys belong to
    private long[] wrIds;
    private long[] addresses;
    private int[] lengths;
    private int[] lkeys;
    private int[] counts;
    private Sges[] more; // null until a receive has more than one entry; then per slot, null for single entries
    private int head;
    private int size;

    ReceiveRing(int depth, SoftPd pd) {
        this.depth = depth;
        this.pd = pd;
        allocate(Math.min(depth, FIRST));
    }

    private void allocate(int slots) {
        wrIds = new long[slots];
        addresses = new long[slots];
        lengths = new int[slots];
        lkeys = new int[slots];
        counts = new int[slots];
    }

    /** Queues a receive as the newest. */
    void add(long wrId, SgeList sgl) {
        if (size == wrIds.length) {
            if (size == depth) throw new IllegalStateException("a soft receive queue of " + depth + " entries overflowed");
            grow();
        }
        store((head + size++) % wrIds.length, wrId, sgl);
    }

    private void store(int slot, long wrId, SgeList sgl) {
        int count = sgl.count();
        wrIds[slot] = wrId;
        counts[slot] = count;
        if (count > 0) {
            addresses[slot] = sgl.address(0);
            lengths[slot] = sgl.length(0);
            lkeys[slot] = sgl.lkey(0);
        }
        if (count > 1) {
            if (more == null) more = new Sges[wrIds.length];
            if (more[slot] == null) more[slot] = new Sges();
            more[slot].copyFrom(sgl);
        }
    }

    /** Doubles the ring (at most to the depth), the queued receives first, in order. */
    private void grow() {
        int slots = Math.min(depth, 2 * wrIds.length);
        long[] w = wrIds, a = addresses;
        int[] l = lengths, k = lkeys, c = counts;
        Sges[] m = more;
        int old = w.length;
        allocate(slots);
        if (m != null) more = new Sges[slots];
        for (int i = 0; i < size; i++) {
            int from = (head + i) % old;
            wrIds[i] = w[from];
            addresses[i] = a[from];
            lengths[i] = l[from];
            lkeys[i] = k[from];
            counts[i] = c[from];
            if (m != null) more[i] = m[from];
        }
        head = 0;
    }

    /** Moves the oldest receive into {@code into} and removes it; false if there is none. */
    boolean take(RecvWork into) {
        if (size == 0) return false;
        int slot = head;
        into.wrId = wrIds[slot];
        into.pd = pd;
        if (counts[slot] > 1) into.sges.copyFrom(more[slot]);
        else into.sges.setSingle(counts[slot], addresses[slot], lengths[slot], lkeys[slot]);
        head = (head + 1) % wrIds.length;
        size--;
        return true;
    }

    /** Queues {@code from} as the oldest receive again (one just taken, whose request failed before using it). */
    void putBack(RecvWork from) {
        head = (head - 1 + wrIds.length) % wrIds.length;
        size++;
        store(head, from.wrId, from.sges);
    }

    boolean isEmpty() {
        return size == 0;
    }

    int size() {
        return size;
    }

    void clear() {
        head = 0;
        size = 0;
        if (more != null) Arrays.fill(more, null);
    }
}
