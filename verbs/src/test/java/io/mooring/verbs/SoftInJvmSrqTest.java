package io.mooring.verbs;

import io.mooring.lifecycle.ResourceGraph;

/** The shared receive queue with every QP on soft0: each SEND runs the responder on the requester's thread. */
class SoftInJvmSrqTest extends SrqConformance {
    @Override
    DeviceContext openServer(ResourceGraph graph) {
        return RdmaDevices.open("soft:soft0", graph);
    }

    @Override
    DeviceContext openClient(ResourceGraph graph) {
        return RdmaDevices.open("soft:soft0", graph);
    }
}
