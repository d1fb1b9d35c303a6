package io.mooring.verbs;

import io.mooring.lifecycle.ResourceGraph;

/** Both QPs on soft0: the responder runs on the requester's thread. */
class SoftInJvmConformanceTest extends VerbsConformance {
    @Override
    DeviceContext openFirst(ResourceGraph graph) {
        return RdmaDevices.open("soft:soft0", graph);
    }

    @Override
    DeviceContext openSecond(ResourceGraph graph) {
        return RdmaDevices.open("soft:soft0", graph);
    }
}
