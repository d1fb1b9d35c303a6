package io.mooring.verbs.values;

import java.util.Objects;

/**
 * The queue depths and limits of a queue pair ({@code struct ibv_qp_cap}, pyverbs' {@code QPCap}), by name:
 * {@code QpCapabilities.builder().maxSendWr(256).maxInlineData(0).build()}, each setting the {@link #DEFAULT}'s until
 * set, or {@link #toBuilder()} to derive one from another. Immutable.
 */
public final class QpCapabilities {
    /** 128 sends and receives, 4 SGEs each, 64 bytes inline. */
    public static final QpCapabilities DEFAULT = builder().build();

    private final int maxSendWr;
    private final int maxRecvWr;
    private final int maxSendSge;
    private final int maxRecvSge;
    private final int maxInlineData;

    private QpCapabilities(Builder b) {
        this.maxSendWr = positive(b.maxSendWr, "maxSendWr");
        this.maxRecvWr = positive(b.maxRecvWr, "maxRecvWr");
        this.maxSendSge = positive(b.maxSendSge, "maxSendSge");
        this.maxRecvSge = positive(b.maxRecvSge, "maxRecvSge");
        if (b.maxInlineData < 0) {
            throw new IllegalArgumentException("maxInlineData must be >= 0, was " + b.maxInlineData);
        }
        this.maxInlineData = b.maxInlineData;
    }

    private static int positive(int value, String name) {
        if (value <= 0) throw new IllegalArgumentException(name + " must be > 0, was " + value);
        return value;
    }

    /** The {@link #DEFAULT} capabilities, to change by name. */
    public static Builder builder() {
        return new Builder();
    }

    /** These capabilities, to change by name. */
    public Builder toBuilder() {
        return new Builder().maxSendWr(maxSendWr).maxRecvWr(maxRecvWr).maxSendSge(maxSendSge).maxRecvSge(maxRecvSge)
                .maxInlineData(maxInlineData);
    }

    /** The send queue's depth: posting more outstanding sends is refused. */
    public int maxSendWr() {
        return maxSendWr;
    }

    /** The receive queue's depth. */
    public int maxRecvWr() {
        return maxRecvWr;
    }

    /** Scatter/gather entries per send. */
    public int maxSendSge() {
        return maxSendSge;
    }

    /** Scatter/gather entries per receive. */
    public int maxRecvSge() {
        return maxRecvSge;
    }

    /** Bytes a send may carry inline. */
    public int maxInlineData() {
        return maxInlineData;
    }

    /**
     * Checks these capabilities against what {@code device} supports.
     *
     * @throws IllegalArgumentException naming the first capability above the device's limit, and the limit
     */
    public void requireWithin(DeviceAttributes device) {
        within(maxSendWr, device.maxQpWr(), "maxSendWr", "max_qp_wr");
        within(maxRecvWr, device.maxQpWr(), "maxRecvWr", "max_qp_wr");
        within(maxSendSge, device.maxSge(), "maxSendSge", "max_sge");
        within(maxRecvSge, device.maxSge(), "maxRecvSge", "max_sge");
        within(maxInlineData, device.maxInlineData(), "maxInlineData", "max_inline_data");
    }

    /** Refuses {@code value} above a device limit, naming both (the check every device limit is held to). */
    public static void within(int value, int limit, String name, String deviceLimit) {
        if (value > limit) {
            throw new IllegalArgumentException(name + " " + value + " exceeds the device's " + deviceLimit + " of " + limit);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof QpCapabilities c && maxSendWr == c.maxSendWr && maxRecvWr == c.maxRecvWr
                && maxSendSge == c.maxSendSge && maxRecvSge == c.maxRecvSge && maxInlineData == c.maxInlineData;
    }

    @Override
    public int hashCode() {
        return Objects.hash(maxSendWr, maxRecvWr, maxSendSge, maxRecvSge, maxInlineData);
    }

    @Override
    public String toString() {
        return "QpCapabilities[maxSendWr=" + maxSendWr + ", maxRecvWr=" + maxRecvWr + ", maxSendSge=" + maxSendSge
                + ", maxRecvSge=" + maxRecvSge + ", maxInlineData=" + maxInlineData + "]";
    }

    /** Sets capabilities by name; {@link #build()} checks them. */
    public static final class Builder {
        private int maxSendWr = 128;
        private int maxRecvWr = 128;
        private int maxSendSge = 4;
        private int maxRecvSge = 4;
        private int maxInlineData = 64;

        private Builder() {}

        /** See {@link QpCapabilities#maxSendWr()} (default 128). */
        public Builder maxSendWr(int depth) {
            this.maxSendWr = depth;
            return this;
        }

        /** See {@link QpCapabilities#maxRecvWr()} (default 128). */
        public Builder maxRecvWr(int depth) {
            this.maxRecvWr = depth;
            return this;
        }

        /** See {@link QpCapabilities#maxSendSge()} (default 4). */
        public Builder maxSendSge(int entries) {
            this.maxSendSge = entries;
            return this;
        }

        /** See {@link QpCapabilities#maxRecvSge()} (default 4). */
        public Builder maxRecvSge(int entries) {
            this.maxRecvSge = entries;
            return this;
        }

        /** See {@link QpCapabilities#maxInlineData()} (default 64). */
        public Builder maxInlineData(int bytes) {
            this.maxInlineData = bytes;
            return this;
        }

        /** @throws IllegalArgumentException naming the setting at fault */
        public QpCapabilities build() {
            return new QpCapabilities(this);
        }
    }
}
