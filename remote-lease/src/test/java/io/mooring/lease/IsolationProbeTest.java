package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.lifecycle.ResourceInfo;
import io.mooring.lifecycle.ResourceListener;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.testing.FaultPlan;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class IsolationProbeTest {

    @Test
    void theSoftProviderEnforcesWindowBoundsAndTheProbeLeavesNothingBehind() {
        var graph = ResourceGraph.builder().name("probe").build();
        var context = RdmaDevices.open("soft:soft0", graph);
        var pd = context.allocateProtectionDomain();
        assertEquals(Isolation.WINDOW, IsolationProbe.run(pd));
        assertEquals(List.of(pd.resource().info().id()),
                context.resource().children().stream().map(c -> c.id()).toList(), "only the PD is left");
        assertEquals(List.of(), pd.resource().children());
        graph.close();
        assertEquals(0, graph.liveCount());
    }

    /** The answer is the device's: a second session on the device makes no QP, window or region to learn it. */
    @Test
    void aDeviceIsProbedOnce() {
        var created = new AtomicInteger();
        var graph = ResourceGraph.builder().name("probe-once").listener(new ResourceListener() {
            @Override
            public void created(ResourceInfo resource) {
                created.incrementAndGet();
            }
        }).build();
        var pd = RdmaDevices.open("soft:soft1", graph).allocateProtectionDomain();
        Isolation first = IsolationProbe.probe(pd);
        int afterFirst = created.get();
        for (int i = 0; i < 3; i++) assertEquals(first, IsolationProbe.probe(pd));
        assertEquals(afterFirst, created.get(), "verbs objects made after the first probe of soft1");
        graph.close();
        assertEquals(0, graph.liveCount());
    }

    /**
     * A lost answer to the probe's write (its REM_ACCESS_ERR NAK dropped, so the retransmission meets a QP in ERROR
     * and ends in RETRY_EXC_ERR) says nothing about the window: the probe must not conclude that windows leak, which
     * would put a device that enforces their bounds on dedicated registrations. The chaos suite found it.
     */
    @Test
    void aLostAnswerIsNoVerdictTheProbeRunsAgain() {
        var graph = ResourceGraph.builder().name("probe-lossy").build();
        var context = RdmaDevices.open("soft:soft0", graph);
        var pd = context.allocateProtectionDomain();
        // Each QP draws from its own generator: with this seed the first attempt's write loses its answer.
        try (var faults = context.injectFaults(FaultPlan.seeded(SEED).dropResponses(0.5))) {
            assertEquals(Isolation.WINDOW, IsolationProbe.run(pd));
            assertTrue(faults.counts().of(FaultPlan.Fault.DROP_RESPONSE) >= 1, faults::toString);
        }
        try (var _ = context.injectFaults(FaultPlan.seeded(1).at(1, FaultPlan.Fault.DROP_RESPONSE))) {
            var e = assertThrows(IllegalStateException.class, () -> IsolationProbe.run(pd), "every answer lost");
            assertTrue(e.getMessage().contains("could not tell in " + IsolationProbe.ATTEMPTS + " attempts"), e.getMessage());
        }
        graph.close();
        assertEquals(0, graph.liveCount());
    }

    private static final long SEED = 1;
}
