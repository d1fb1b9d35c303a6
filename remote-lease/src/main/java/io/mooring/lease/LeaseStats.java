package io.mooring.lease;

/**
 * A lease manager's counters ({@link LeaseManager#stats()}), as one snapshot: an interface, so that it may grow
 * without breaking a caller, and a caller can fake one in a test.
 */
public interface LeaseStats {
    /** How leases are confined to their blocks on this device. */
    Isolation isolation();

    /** Leases now. */
    int active();

    /** Bytes leased now. */
    long activeBytes();

    /** Leases granted so far. */
    long granted();

    /** Ended by the holder's release. */
    long released();

    /** Ended by expiry. */
    long expired();

    /** Ended by session loss, completion of a lease's stage, or the owner closing. */
    long revoked();

    /** Requests refused (limits, bad arguments). */
    long refused();

    /** Memory windows waiting for reuse. */
    int pooledWindows();
}
