package io.mooring.testing;

/**
 * The heap in use once garbage is collected, for tests that hold a footprint to a bound: the least of a few
 * collections, since one may leave some garbage behind. Coarse (tens of KiB): divide by many objects.
 */
public final class HeapAfterGc {
    private HeapAfterGc() {
    }

    public static long bytes() throws InterruptedException {
        long least = Long.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(50);
            least = Math.min(least, Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory());
        }
        return least;
    }
}
