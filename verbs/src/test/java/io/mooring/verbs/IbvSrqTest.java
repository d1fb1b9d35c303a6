package io.mooring.verbs;

import io.mooring.lifecycle.ResourceGraph;
import org.junit.jupiter.api.BeforeAll;

/**
 * The shared receive queue cases against the first ibv device (rxe0 in the VM), opened twice. Skipped, with the
 * reason, where there is no ibv device.
 */
class IbvSrqTest extends SrqConformance {
    private static String device;

    @BeforeAll
    static void requireDevice() {
        device = IbvDevice.require();
    }

    @Override
    DeviceContext openServer(ResourceGraph graph) {
        return RdmaDevices.open("ibv:" + device, graph);
    }

    @Override
    DeviceContext openClient(ResourceGraph graph) {
        return RdmaDevices.open("ibv:" + device, graph);
    }
}
