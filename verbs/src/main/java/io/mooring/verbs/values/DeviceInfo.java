package io.mooring.verbs.values;

import java.util.List;

/**
 * A device as listed by {@link io.mooring.verbs.RdmaDevices#list()}.
 *
 * @param provider   the provider that drives it: {@code ibv} or {@code soft}
 * @param name       e.g. {@code rxe0} or {@code soft0}
 * @param attributes what it supports
 * @param ports      its ports
 */
public record DeviceInfo(String provider, String name, DeviceAttributes attributes, List<PortAttributes> ports) {
    public DeviceInfo {
        ports = List.copyOf(ports);
    }

    @Override
    public String toString() {
        return provider + ":" + name;
    }
}
