package io.mooring.lease;

import io.mooring.verbs.values.Access;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * What one peer may hold at once; a request beyond any of these is refused with a message naming the limit. Made by
 * {@link #builder()} (every setting has the {@link #DEFAULT}'s value until set) or {@link #toBuilder()}.
 */
public final class LeaseLimits {
    /** 256 MiB and 1024 leases per peer, 5 minutes per grant, 1 hour in all, read/write/atomic, 250 ms grace. */
    public static final LeaseLimits DEFAULT = builder().build();

    private final long maxBytes;
    private final int maxLeases;
    private final Duration maxDuration;
    private final Duration maxLifetime;
    private final Set<Access> maxAccess;
    private final Duration grace;

    private LeaseLimits(Builder b) {
        if (b.maxBytes <= 0 || b.maxLeases <= 0) {
            throw new IllegalArgumentException("maxBytes and maxLeases must be positive, got " + b.maxBytes + ", "
                    + b.maxLeases);
        }
        if (b.maxDuration.isNegative() || b.maxDuration.isZero() || b.maxLifetime.compareTo(b.maxDuration) < 0) {
            throw new IllegalArgumentException("need 0 < maxDuration <= maxLifetime, got " + b.maxDuration + ", "
                    + b.maxLifetime);
        }
        if (b.grace.isNegative()) throw new IllegalArgumentException("grace must not be negative, was " + b.grace);
        if (!Access.REMOTE.containsAll(b.maxAccess)) {
            throw new IllegalArgumentException("a lease carries remote rights only, not " + b.maxAccess);
        }
        this.maxBytes = b.maxBytes;
        this.maxLeases = b.maxLeases;
        this.maxDuration = b.maxDuration;
        this.maxLifetime = b.maxLifetime;
        this.maxAccess = Set.copyOf(b.maxAccess);
        this.grace = b.grace;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding these limits, to change some of them. */
    public Builder toBuilder() {
        return new Builder().maxBytes(maxBytes).maxLeases(maxLeases).maxDuration(maxDuration).maxLifetime(maxLifetime)
                .maxAccess(maxAccess).grace(grace);
    }

    /** Bytes leased to the peer at once (the same bytes leased over several of its sessions count once). */
    public long maxBytes() {
        return maxBytes;
    }

    /** Leases held by the peer at once. */
    public int maxLeases() {
        return maxLeases;
    }

    /** The longest single grant or renewal. */
    public Duration maxDuration() {
        return maxDuration;
    }

    /** The longest a lease may live in total, renewals included (the renewal ceiling). */
    public Duration maxLifetime() {
        return maxLifetime;
    }

    /** The rights a lease may carry. */
    public Set<Access> maxAccess() {
        return maxAccess;
    }

    /**
     * How long after its deadline the owner still honours a lease, so that a holder that stops a margin before its own
     * (monotonic, local) deadline never races the revocation.
     */
    public Duration grace() {
        return grace;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LeaseLimits l && maxBytes == l.maxBytes && maxLeases == l.maxLeases
                && maxDuration.equals(l.maxDuration) && maxLifetime.equals(l.maxLifetime)
                && maxAccess.equals(l.maxAccess) && grace.equals(l.grace);
    }

    @Override
    public int hashCode() {
        return Objects.hash(maxBytes, maxLeases, maxDuration, maxLifetime, maxAccess, grace);
    }

    @Override
    public String toString() {
        return "LeaseLimits[maxBytes=" + maxBytes + ", maxLeases=" + maxLeases + ", maxDuration=" + maxDuration
                + ", maxLifetime=" + maxLifetime + ", maxAccess=" + maxAccess + ", grace=" + grace + "]";
    }

    /** Sets limits by name; {@link #build()} checks them together. */
    public static final class Builder {
        private long maxBytes = 256L << 20;
        private int maxLeases = 1024;
        private Duration maxDuration = Duration.ofMinutes(5);
        private Duration maxLifetime = Duration.ofHours(1);
        private Set<Access> maxAccess = EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE, Access.REMOTE_ATOMIC);
        private Duration grace = Duration.ofMillis(250);

        private Builder() {}

        /** See {@link LeaseLimits#maxBytes()} (default 256 MiB). */
        public Builder maxBytes(long maxBytes) {
            this.maxBytes = maxBytes;
            return this;
        }

        /** See {@link LeaseLimits#maxLeases()} (default 1024). */
        public Builder maxLeases(int maxLeases) {
            this.maxLeases = maxLeases;
            return this;
        }

        /** See {@link LeaseLimits#maxDuration()} (default 5 minutes). */
        public Builder maxDuration(Duration maxDuration) {
            this.maxDuration = Objects.requireNonNull(maxDuration, "maxDuration");
            return this;
        }

        /** See {@link LeaseLimits#maxLifetime()} (default 1 hour). */
        public Builder maxLifetime(Duration maxLifetime) {
            this.maxLifetime = Objects.requireNonNull(maxLifetime, "maxLifetime");
            return this;
        }

        /** See {@link LeaseLimits#maxAccess()} (default read, write and atomics). */
        public Builder maxAccess(Set<Access> maxAccess) {
            this.maxAccess = Set.copyOf(maxAccess);
            return this;
        }

        /** See {@link LeaseLimits#grace()} (default 250 ms). */
        public Builder grace(Duration grace) {
            this.grace = Objects.requireNonNull(grace, "grace");
            return this;
        }

        /** @throws IllegalArgumentException naming the setting at fault */
        public LeaseLimits build() {
            return new LeaseLimits(this);
        }
    }
}
