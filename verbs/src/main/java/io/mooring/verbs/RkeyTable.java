package io.mooring.verbs;

/**
 * The bound windows of a protection domain by their current rkey, so that a LOCAL_INV of a key finds the window it
 * ends. Open addressing over an {@code int[]} (a null window marks a free slot; backward-shift deletion, no
 * tombstones): unlike a map of boxed keys, a lookup, a bind's insert and an invalidation's removal allocate nothing;
 * only growth does. One monitor: each operation is a few array probes, by posters (lookups) and by pollers (binds and
 * invalidations completing).
 */
final class RkeyTable {
    private int[] keys = new int[16];
    private MemoryWindow.State[] windows = new MemoryWindow.State[16];
    private int size;

    synchronized MemoryWindow.State get(int rkey) {
        return windows[indexOf(keys, windows, rkey)];
    }

    synchronized void put(int rkey, MemoryWindow.State window) {
        int i = indexOf(keys, windows, rkey);
        if (windows[i] == null) {
            if ((size + 1) * 2 > keys.length) {
                grow();
                i = indexOf(keys, windows, rkey);
            }
            size++;
        }
        keys[i] = rkey;
        windows[i] = window;
    }

    /** Removes {@code rkey} if it still maps to {@code window} (a later bind may have taken the key since). */
    synchronized void remove(int rkey, MemoryWindow.State window) {
        int i = indexOf(keys, windows, rkey);
        if (windows[i] != window) return;
        int mask = keys.length - 1;
        // backward shift: every later entry of the probe run whose home is not between the hole and it moves up
        for (int j = (i + 1) & mask; windows[j] != null; j = (j + 1) & mask) {
            int home = mix(keys[j]) & mask;
            if (((j - home) & mask) >= ((j - i) & mask)) {
                keys[i] = keys[j];
                windows[i] = windows[j];
                i = j;
            }
        }
        windows[i] = null;
        size--;
    }

    private void grow() {
        int[] oldKeys = keys;
        MemoryWindow.State[] oldWindows = windows;
        keys = new int[oldKeys.length * 2];
        windows = new MemoryWindow.State[oldKeys.length * 2];
        for (int i = 0; i < oldKeys.length; i++) {
            if (oldWindows[i] == null) continue;
            int at = indexOf(keys, windows, oldKeys[i]);
            keys[at] = oldKeys[i];
            windows[at] = oldWindows[i];
        }
    }

    /** The slot holding {@code rkey}, else the free slot where it would go. */
    private static int indexOf(int[] keys, MemoryWindow.State[] windows, int rkey) {
        int mask = keys.length - 1;
        for (int i = mix(rkey) & mask; ; i = (i + 1) & mask) {
            if (windows[i] == null || keys[i] == rkey) return i;
        }
    }

    private static int mix(int rkey) {
        return rkey * 0x9E3779B9 >>> 16 ^ rkey;
    }
}
