package io.mooring.lease;

import io.mooring.verbs.values.Access;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;

/**
 * What one peer may hold at once; a request beyond any of these is refused with a message naming the limit.
 *
 * @param maxBytes     bytes leased to the peer at once (the same bytes leased over several of its sessions count once)
 * @param maxLeases    leases held by the peer at once
 * @param maxDuration  the longest single grant or renewal
 * @param maxLifetime  the longest a lease may live in total, renewals included (the renewal ceiling)
 * @param maxAccess    the rights a lease may carry
 * @param grace        how long after its deadline the owner still honours a lease, so that a holder that
 *                     stops a margin before its own (monotonic, local) deadline never races the revocation
 */
public record LeaseLimits(long maxBytes, int maxLeases, Duration maxDuration, Duration maxLifetime,
                          Set<Access> maxAccess, Duration grace) {
    /** 256 MiB and 1024 leases per peer, 5 minutes per grant, 1 hour in all, read/write/atomic, 250 ms grace. */
    public static final LeaseLimits DEFAULT = new LeaseLimits(256L << 20, 1024, Duration.ofMinutes(5),
            Duration.ofHours(1), EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE, Access.REMOTE_ATOMIC),
            Duration.ofMillis(250));

    public LeaseLimits {
        if (maxBytes <= 0 || maxLeases <= 0) throw new IllegalArgumentException("limits must be positive");
        if (maxDuration.isNegative() || maxDuration.isZero() || maxLifetime.compareTo(maxDuration) < 0) {
            throw new IllegalArgumentException("need 0 < maxDuration <= maxLifetime, got " + maxDuration + ", " + maxLifetime);
        }
        if (grace.isNegative()) throw new IllegalArgumentException("grace must not be negative, was " + grace);
        maxAccess = Set.copyOf(maxAccess);
        if (!Access.REMOTE.containsAll(maxAccess)) {
            throw new IllegalArgumentException("a lease carries remote rights only, not " + maxAccess);
        }
    }
}
