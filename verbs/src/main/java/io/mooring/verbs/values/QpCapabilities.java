package io.mooring.verbs.values;

/**
 * The queue depths and limits of a queue pair ({@code struct ibv_qp_cap}).
 *
 * @param maxSendWr     send queue depth: posting more outstanding sends is refused
 * @param maxRecvWr     receive queue depth
 * @param maxSendSge    scatter/gather entries per send
 * @param maxRecvSge    scatter/gather entries per receive
 * @param maxInlineData bytes a send may carry inline
 */
public record QpCapabilities(int maxSendWr, int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInlineData) {
    /** 128 sends and receives, 4 SGEs each, 64 bytes inline. */
    public static final QpCapabilities DEFAULT = new QpCapabilities(128, 128, 4, 4, 64);

    public QpCapabilities {
        positive(maxSendWr, "maxSendWr");
        positive(maxRecvWr, "maxRecvWr");
        positive(maxSendSge, "maxSendSge");
        positive(maxRecvSge, "maxRecvSge");
        if (maxInlineData < 0) throw new IllegalArgumentException("maxInlineData must be >= 0, was " + maxInlineData);
    }

    private static void positive(int value, String name) {
        if (value <= 0) throw new IllegalArgumentException(name + " must be > 0, was " + value);
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
}
