package io.mooring.lease;

/**
 * A lease manager's counters.
 *
 * @param isolation      how leases are confined to their blocks on this device
 * @param active         leases now
 * @param activeBytes    bytes exposed now
 * @param granted        leases granted so far
 * @param released       ended by release
 * @param expired        ended by expiry
 * @param revoked        ended by session loss, completion of an exposure's stage, or the owner closing
 * @param refused        requests refused (limits, bad arguments)
 * @param pooledWindows  memory windows waiting for reuse
 */
public record LeaseStats(Isolation isolation, int active, long activeBytes, long granted, long released,
                         long expired, long revoked, long refused, int pooledWindows) {}
