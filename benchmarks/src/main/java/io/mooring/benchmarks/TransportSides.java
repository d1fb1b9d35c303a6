package io.mooring.benchmarks;

import com.sun.management.OperatingSystemMXBean;
import io.mooring.allocator.ArenaStats;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaSession;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import java.lang.management.ManagementFactory;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Two endpoints in this JVM, each on a {@code soft0} device of its own with its own default arena (the in-JVM link,
 * the least noisy transport): what {@link NettyTransport}'s raw sessions and Netty channels run over. Teardown fails
 * the benchmark if a block is left out of an arena or the graph keeps a resource.
 */
abstract class TransportSides {
    ResourceGraph graph;
    RdmaArena serverArena;
    RdmaArena clientArena;
    RdmaEndpoint serverEndpoint;
    RdmaEndpoint clientEndpoint;
    private static final OperatingSystemMXBean OS = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    /** Operations of this iteration (the benchmark counts them); the blocks handed out and CPU used before it. */
    long operations;
    private long blocksBefore;
    private long cpuBefore;

    /** What the report names: the traffic and its parameters. */
    abstract String label();

    void openEndpoints() {
        Fairness.checkWorkerThread();
        // A session's close is reported at INFO by its peer: ordinary at teardown, noise in JMH's output.
        Logger.getLogger(RdmaSession.class.getPackageName()).setLevel(java.util.logging.Level.WARNING);
        graph = ResourceGraph.builder().name("transport-benchmark").build();
        ProtectionDomain serverPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        ProtectionDomain clientPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        serverArena = RdmaArena.builder(serverPd).name("server").build();
        clientArena = RdmaArena.builder(clientPd).name("client").build();
        serverEndpoint = RdmaEndpoint.builder(serverPd, serverArena).build();
        clientEndpoint = RdmaEndpoint.builder(clientPd, clientArena).build();
    }

    @Setup(Level.Iteration)
    public void startCounting() {
        operations = 0;
        blocksBefore = blocksHandedOut();
        cpuBefore = OS.getProcessCpuTime();
    }

    /**
     * Prints, per operation of the iteration, the blocks both arenas handed out — the receives reposted, the
     * application's buffers, and any copy the transport made: the one figure that tells copies apart from none — and
     * the CPU time of the whole process (every thread: event loops, dispatchers, the soft NIC's, GC), in µs.
     */
    @TearDown(Level.Iteration)
    public void report() {
        if (operations == 0) return;
        long cpu = OS.getProcessCpuTime() - cpuBefore;
        System.out.printf("(%s: %.2f blocks from the arenas, %.1f µs of process CPU per operation)%n",
                label(), (double) (blocksHandedOut() - blocksBefore) / operations,
                cpu / 1e3 / operations);
    }

    private long blocksHandedOut() {
        long blocks = 0;
        for (RdmaArena arena : new RdmaArena[] {serverArena, clientArena}) {
            ArenaStats stats = arena.stats();
            blocks += stats.largeAllocations() + stats.hugeAllocations();
            for (ArenaStats.ClassStats c : stats.classes()) blocks += c.allocations();
        }
        return blocks;
    }

    /** Closes the endpoints, then the arenas once every block is back (a release on another thread is collected soon). */
    void closeEndpoints() throws InterruptedException {
        clientEndpoint.close();
        serverEndpoint.close();
        try {
            awaitAllBlocksBack(serverArena);
            awaitAllBlocksBack(clientArena);
        } finally {
            serverArena.close();
            clientArena.close();
            graph.close();
        }
        if (graph.liveCount() != 0) throw new IllegalStateException("left behind:\n" + graph.dump());
    }

    private static void awaitAllBlocksBack(RdmaArena arena) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            arena.flushThreadCaches();
            ArenaStats s = arena.stats();
            if (s.liveBlocks() == 0 && s.uncollectedFrees() == 0) return;
            if (System.nanoTime() > deadline) throw new IllegalStateException("the benchmark left blocks out: " + s);
            Thread.sleep(5);
        }
    }
}
