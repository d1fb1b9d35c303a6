package io.mooring.verbs;

/**
 * The regions each slot's request pins until it retires, so that none is deregistered while the NIC may use it. The
 * first region of each slot sits in a flat array, since most requests name one; a slot whose request names more
 * gets an array of its own for the rest, made by the first such request and grown to the most one named, never
 * again after that. An endpoint's sessions are many, and each keeps dozens of slots. Touched by the slot's owner only:
 * the poster pins, the retirer unpins, the slot's state word hands it from one to the other.
 */
final class RegionPins {
    private final MemoryRegion[] first;
    private final int[] count;
    private MemoryRegion[][] rest; // null until a request names more than one region; then per slot, null if none did

    RegionPins(int slots) {
        first = new MemoryRegion[slots];
        count = new int[slots];
    }

    /**
     * Pins every region of {@code sgl} plus {@code extra} (may be null) for {@code slot}. On a closed region nothing
     * stays pinned and {@link io.mooring.lifecycle.ResourceClosedException} is thrown.
     */
    void pin(int slot, ScatterGatherList sgl, MemoryRegion extra) {
        int most = sgl.count() + (extra == null ? 0 : 1);
        if (most > 1) reserve(slot, most - 1);
        count[slot] = 0;
        try {
            for (int i = 0; i < sgl.count(); i++) {
                MemoryRegion mr = sgl.region(i);
                if (mr != null) add(slot, mr);
            }
            if (extra != null) add(slot, extra);
        } catch (RuntimeException e) {
            unpin(slot);
            throw e;
        }
    }

    private void reserve(int slot, int n) {
        if (rest == null) rest = new MemoryRegion[first.length][];
        if (rest[slot] == null || rest[slot].length < n) rest[slot] = new MemoryRegion[n];
    }

    private void add(int slot, MemoryRegion mr) {
        mr.resource().addPin();
        int i = count[slot]++;
        if (i == 0) first[slot] = mr;
        else rest[slot][i - 1] = mr;
    }

    /** Unpins what {@code slot} pinned. */
    void unpin(int slot) {
        int n = count[slot];
        count[slot] = 0;
        for (int i = 0; i < n; i++) {
            if (i == 0) {
                first[slot].resource().removePin();
                first[slot] = null;
            } else {
                rest[slot][i - 1].resource().removePin();
                rest[slot][i - 1] = null;
            }
        }
    }
}
