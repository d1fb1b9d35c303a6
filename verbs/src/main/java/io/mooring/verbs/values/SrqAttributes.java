package io.mooring.verbs.values;

import java.util.Objects;

/**
 * The size and limit of a shared receive queue ({@code struct ibv_srq_attr}, pyverbs' {@code SrqAttr}), by name:
 * {@code SrqAttributes.builder().maxWr(1024).limit(64).build()}, each setting the {@link #DEFAULT}'s until set, or
 * {@link #toBuilder()} to derive one from another. Immutable.
 */
public final class SrqAttributes {
    /** 128 receives of one scatter/gather entry each, not armed. */
    public static final SrqAttributes DEFAULT = builder().build();

    private final int maxWr;
    private final int maxSge;
    private final int limit;

    private SrqAttributes(Builder b) {
        if (b.maxWr < 1 || b.maxSge < 1) {
            throw new IllegalArgumentException("a shared receive queue needs maxWr >= 1 and maxSge >= 1, was "
                    + b.maxWr + " and " + b.maxSge);
        }
        if (b.limit < 0 || b.limit > b.maxWr) {
            throw new IllegalArgumentException("SRQ limit " + b.limit + " is outside [0, maxWr " + b.maxWr + "]");
        }
        this.maxWr = b.maxWr;
        this.maxSge = b.maxSge;
        this.limit = b.limit;
    }

    /** The {@link #DEFAULT} attributes, to change by name. */
    public static Builder builder() {
        return new Builder();
    }

    /** These attributes, to change by name. */
    public Builder toBuilder() {
        return new Builder().maxWr(maxWr).maxSge(maxSge).limit(limit);
    }

    /** Receives outstanding at most: posting more is refused. */
    public int maxWr() {
        return maxWr;
    }

    /** Scatter/gather entries per receive. */
    public int maxSge() {
        return maxSge;
    }

    /**
     * The limit the queue is armed at when made (0: not armed): the first time fewer receives than this are posted
     * it tells its {@code onLimitReached} listener, once.
     */
    public int limit() {
        return limit;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SrqAttributes a && maxWr == a.maxWr && maxSge == a.maxSge && limit == a.limit;
    }

    @Override
    public int hashCode() {
        return Objects.hash(maxWr, maxSge, limit);
    }

    @Override
    public String toString() {
        return "SrqAttributes[maxWr=" + maxWr + ", maxSge=" + maxSge + ", limit=" + limit + "]";
    }

    /** Sets attributes by name; {@link #build()} checks them together. */
    public static final class Builder {
        private int maxWr = 128;
        private int maxSge = 1;
        private int limit;

        private Builder() {}

        /** See {@link SrqAttributes#maxWr()} (default 128). */
        public Builder maxWr(int receives) {
            this.maxWr = receives;
            return this;
        }

        /** See {@link SrqAttributes#maxSge()} (default 1). */
        public Builder maxSge(int entries) {
            this.maxSge = entries;
            return this;
        }

        /** See {@link SrqAttributes#limit()} (default 0). */
        public Builder limit(int receives) {
            this.limit = receives;
            return this;
        }

        /** @throws IllegalArgumentException naming the setting at fault */
        public SrqAttributes build() {
            return new SrqAttributes(this);
        }
    }
}
