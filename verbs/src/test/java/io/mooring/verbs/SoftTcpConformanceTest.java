package io.mooring.verbs;

import io.mooring.lifecycle.ResourceGraph;

/** soft0 and soft1: every operation crosses the TCP fabric (inside one JVM; see also the two-process test). */
class SoftTcpConformanceTest extends VerbsConformance {
    @Override
    DeviceContext openFirst(ResourceGraph graph) {
        return RdmaDevices.open("soft:soft0", graph);
    }

    @Override
    DeviceContext openSecond(ResourceGraph graph) {
        return RdmaDevices.open("soft:soft1", graph);
    }
}
