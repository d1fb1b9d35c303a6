package io.mooring.verbs;

import io.mooring.lifecycle.ResourceGraph;

/** The shared receive queue on soft0, its QPs' peers on soft1: every SEND crosses the TCP fabric. */
class SoftSrqTest extends SrqConformance {
    @Override
    DeviceContext openServer(ResourceGraph graph) {
        return RdmaDevices.open("soft:soft0", graph);
    }

    @Override
    DeviceContext openClient(ResourceGraph graph) {
        return RdmaDevices.open("soft:soft1", graph);
    }
}
