package io.mooring.regcache;

import io.mooring.lifecycle.ClosePolicy;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.lifecycle.ResourceListener;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;

/** A soft device and a PD in a graph of their own per test; closing checks that nothing was left behind. */
final class PdFixture implements AutoCloseable {
    final ResourceGraph graph;
    final DeviceContext context;
    final ProtectionDomain pd;

    PdFixture(ClosePolicy policy, ResourceListener... listeners) {
        var builder = ResourceGraph.builder().name("regcache-test").policy(policy);
        for (ResourceListener l : listeners) builder.listener(l);
        graph = builder.build();
        context = RdmaDevices.open("soft:soft0", graph);
        pd = context.allocateProtectionDomain();
    }

    @Override
    public void close() {
        graph.close();
        if (graph.liveCount() != 0) throw new AssertionError("left behind:\n" + graph.dump());
    }
}
