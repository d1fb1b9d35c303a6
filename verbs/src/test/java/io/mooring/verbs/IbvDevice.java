package io.mooring.verbs;

import io.mooring.verbs.ibv.IbvProvider;
import io.mooring.verbs.values.DeviceInfo;
import java.util.List;
import org.junit.jupiter.api.Assumptions;

/** The first ibv device, for tests that need real verbs (the rxe VM); they skip, saying why, where there is none. */
final class IbvDevice {
    private static final String NAME;
    private static final String WHY_NOT;

    static {
        String name = null;
        String why = null;
        try {
            List<DeviceInfo> devices = new IbvProvider().devices();
            if (devices.isEmpty()) why = "no RDMA device: ibv_get_device_list lists none";
            else name = devices.getFirst().name();
        } catch (VerbsException e) {
            why = "no RDMA device: " + e.getMessage() + " (run scripts/rxe-test.sh for the Soft-RoCE VM)";
        }
        NAME = name;
        WHY_NOT = why;
    }

    private IbvDevice() {}

    /** The device's name; skips the calling test (class, from a {@code @BeforeAll}) if there is none. */
    static String require() {
        Assumptions.assumeTrue(NAME != null, WHY_NOT);
        return NAME;
    }

    /** Whether it is Soft-RoCE, which checks window accesses against the whole region. */
    static boolean isRxe() {
        return NAME != null && NAME.startsWith("rxe");
    }
}
