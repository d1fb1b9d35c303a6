package io.mooring.verbs.soft;

import io.mooring.verbs.spi.AsyncEventSink;
import io.mooring.verbs.spi.ContextOps;
import io.mooring.verbs.spi.VerbsProvider;
import io.mooring.verbs.values.DeviceInfo;
import java.util.ArrayList;
import java.util.List;

/**
 * The pure-Java provider. It offers {@value #DEVICES_PROPERTY} devices (default 1) named {@code soft0},
 * {@code soft1}, ...; QPs on different devices talk over TCP even inside one JVM, which is how the TCP fabric is
 * tested without a second process. {@value TcpFabric#BIND_PROPERTY} chooses the listening address.
 * {@value #MEMLOCK_PROPERTY} (bytes, read at each registration; default unlimited) plays the process's
 * locked-memory limit: registrations of all soft devices together beyond it fail with ENOMEM, as {@code ibv_reg_mr}
 * does under {@code ulimit -l}. {@value #PLATFORM_REQUESTERS_PROPERTY}{@code =true} (read at each QP's creation)
 * gives each QP's requester a platform thread instead of a virtual one (see {@link Requester}).
 */
public final class SoftProvider implements VerbsProvider {
    public static final String DEVICES_PROPERTY = "mooring.soft.devices";
    public static final String MEMLOCK_PROPERTY = "mooring.soft.memlock";
    public static final String PLATFORM_REQUESTERS_PROPERTY = "mooring.soft.platformRequesters";

    @Override
    public String name() {
        return "soft";
    }

    @Override
    public List<DeviceInfo> devices() {
        List<DeviceInfo> devices = new ArrayList<>();
        for (int i = 0; i < deviceCount(); i++) devices.add(SoftDevice.get("soft" + i, i).info());
        return devices;
    }

    @Override
    public ContextOps open(String deviceName, AsyncEventSink events) {
        int count = deviceCount();
        for (int i = 0; i < count; i++) {
            if (deviceName.equals("soft" + i)) return new SoftContext(SoftDevice.get(deviceName, i), events);
        }
        throw new IllegalArgumentException("no soft device named '" + deviceName + "': there are " + count
                + " (soft0.." + "soft" + (count - 1) + "; -D" + DEVICES_PROPERTY + "=N for more)");
    }

    private static int deviceCount() {
        String v = System.getProperty(DEVICES_PROPERTY, "1");
        try {
            int n = Integer.parseInt(v.trim());
            if (n >= 1 && n <= 64) return n;
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("-D" + DEVICES_PROPERTY + "=" + v + " must be a number from 1 to 64");
    }
}
