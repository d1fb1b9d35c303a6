package io.mooring.allocator;

import io.mooring.lifecycle.ClosePolicy;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.lifecycle.ResourceListener;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/** A soft device, a PD and a graph of their own per test. */
final class ArenaFixture implements AutoCloseable {
    final ResourceGraph graph;
    final DeviceContext context;
    final ProtectionDomain pd;

    ArenaFixture(ClosePolicy policy, ResourceListener... listeners) {
        var builder = ResourceGraph.builder().name("allocator-test").policy(policy);
        for (ResourceListener l : listeners) builder.listener(l);
        graph = builder.build();
        context = RdmaDevices.open("soft:soft0", graph);
        pd = context.allocateProtectionDomain();
    }

    ArenaFixture() {
        this(ClosePolicy.DEFERRED);
    }

    RdmaArena.Builder arena() {
        return RdmaArena.builder(pd).chunkSize(1 << 20).shards(1);
    }

    @Override
    public void close() {
        graph.close();
        if (graph.liveCount() != 0) throw new AssertionError("left behind:\n" + graph.dump());
    }

    /** Waits for what a background pass (the collector, the purger) does, failing after a generous 20 s. */
    static void awaitTrue(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("not within 20 s: " + what);
            Thread.sleep(5);
        }
    }
}
