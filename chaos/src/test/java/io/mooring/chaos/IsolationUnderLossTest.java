package io.mooring.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.RdmaArena;
import io.mooring.lease.Isolation;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.testing.FaultPlan;
import org.junit.jupiter.api.Test;

/**
 * Found by the chaos run (seed 12): an endpoint whose device loses packets while it is probed concluded that memory
 * windows do not confine a peer — a lost REM_ACCESS_ERR NAK ends the probe's write in RETRY_EXC_ERR, which the probe
 * took for "the write landed" — and put the soft device, which enforces window bounds, on dedicated registrations
 * for the JVM's life. {@code soft2} serves this test alone, so its probe runs here, under the faults.
 */
class IsolationUnderLossTest {
    @Test
    void anEndpointProbedOverALossyLinkStillFindsThatWindowsConfine() {
        var graph = ResourceGraph.builder().name("probe-under-loss").build();
        DeviceContext context = RdmaDevices.open("soft:soft2", graph);
        var pd = context.allocateProtectionDomain();
        RdmaArena arena = ChaosRun.arena(pd);
        // With this seed the first QP pair's write loses its answer.
        try (var faults = context.injectFaults(FaultPlan.seeded(1).dropResponses(0.5));
             RdmaEndpoint endpoint = RdmaEndpoint.builder(pd, arena).build()) {
            assertEquals(Isolation.WINDOW, endpoint.isolation());
            assertTrue(faults.counts().of(FaultPlan.Fault.DROP_RESPONSE) >= 1, faults::toString);
        } finally {
            arena.close();
            graph.close();
        }
        assertEquals(0, graph.liveCount(), graph::dump);
    }
}
