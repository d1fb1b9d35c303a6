package io.mooring.verbs;

import java.util.Set;

/**
 * What a device supports ({@code struct ibv_device_attr}, the parts Mooring uses).
 *
 * @param maxMrSize     largest memory region in bytes
 * @param maxQp         queue pairs per device
 * @param maxQpWr       work requests per queue
 * @param maxSge        scatter/gather entries per work request
 * @param maxCq         completion queues per device
 * @param maxCqe        entries per completion queue
 * @param maxMr         memory regions per device
 * @param maxMw         memory windows per device (0: none)
 * @param atomics       whether RDMA atomics are supported
 * @param windowTypes   memory window types supported
 * @param maxInlineData bytes a send may carry inline (copied at post time)
 * @param ports         number of physical ports
 */
public record DeviceAttributes(long maxMrSize, int maxQp, int maxQpWr, int maxSge, int maxCq, int maxCqe,
                               int maxMr, int maxMw, boolean atomics, Set<MwType> windowTypes, int maxInlineData,
                               int ports) {
    public DeviceAttributes {
        windowTypes = Set.copyOf(windowTypes);
    }
}
