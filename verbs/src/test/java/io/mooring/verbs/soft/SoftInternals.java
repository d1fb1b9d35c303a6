package io.mooring.verbs.soft;

/**
 * What tests of the public API need to steer inside the soft NIC: pause an access at a chosen point, see an
 * invalidation waiting for it, start the key counter near its wrap, learn how soon an idle requester's thread ends.
 * Devices are named as the provider names them ({@code soft0}, {@code soft1}, ...) and must be open already.
 */
public final class SoftInternals {
    private SoftInternals() {}

    /**
     * Runs {@code hook} in every access to the region {@code key} names, once the access is admitted and before
     * it touches the memory (null removes it). The region's own accesses through its lkey count too.
     */
    public static void onAdmittedAccess(String device, int key, Runnable hook) {
        SoftMr mr = device(device).keys.region(key);
        if (mr == null || mr.key != key) {
            throw new IllegalArgumentException("no region with key 0x" + Integer.toHexString(key) + " on " + device);
        }
        mr.admittedHook = hook;
    }

    /** Whether an invalidation, rebind or deallocation of the window {@code key} names waits for an access. */
    public static boolean windowChangeWaits(String device, int key) {
        SoftMw mw = device(device).keys.window(key);
        if (mw == null) {
            throw new IllegalArgumentException("no window with key 0x" + Integer.toHexString(key) + " on " + device);
        }
        return mw.admission.hasQueuedThreads();
    }

    /** Makes {@code device} try key index {@code next} (taken modulo the index space) for its next key. */
    public static void restartKeyIndexesAt(String device, int next) {
        device(device).keys.restartAt(next);
    }

    /** How long a QP's requester waits for work before its thread ends. */
    public static long requesterIdleMillis() {
        return java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(Requester.IDLE_NANOS);
    }

    /** How long a requester with requests in flight over TCP waits for an answer before it sends them again. */
    public static long hungPeerMillis() {
        return java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(TcpLink.HUNG_PEER_NANOS);
    }

    private static SoftDevice device(String name) {
        return SoftDevice.get(name, Integer.parseInt(name.substring("soft".length())));
    }
}
