package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.RdmaDevices;
import org.junit.jupiter.api.Test;

class IsolationProbeTest {

    @Test
    void theSoftProviderEnforcesWindowBoundsAndTheProbeLeavesNothingBehind() {
        var graph = ResourceGraph.builder().name("probe").build();
        var context = RdmaDevices.open("soft:soft0", graph);
        var pd = context.allocateProtectionDomain();
        assertEquals(Isolation.WINDOW, IsolationProbe.probe(pd));
        assertEquals(java.util.List.of(pd.resource().info().id()),
                context.resource().children().stream().map(c -> c.id()).toList(), "only the PD is left");
        assertEquals(java.util.List.of(), pd.resource().children());
        graph.close();
        assertEquals(0, graph.liveCount());
    }
}
