package io.mooring.benchmarks;

import io.mooring.allocator.ArenaStats;
import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * One Mooring arena with default settings over a PD of the {@code soft} provider, shared by all benchmark
 * threads (each thread lands on its own shard, as in an application). The soft provider only matters for the
 * chunk registrations, which happen in setup or warm-up, never per block.
 *
 * <p>Teardown fails the benchmark if any block is still live or uncollected, or if closing the graph leaves a
 * resource behind.
 */
@State(Scope.Benchmark)
public class MooringState {
    ResourceGraph graph;
    RdmaArena arena;

    /** The checked arena (the default): a closed block's segment cannot be touched. */
    public static class Checked extends MooringState {}

    /** An arena built with {@code checked(false)}: plain segments that stay addressable after close. */
    public static class Unchecked extends MooringState {
        @Override
        RdmaArena.Builder configure(RdmaArena.Builder builder) {
            return builder.checked(false);
        }
    }

    RdmaArena.Builder configure(RdmaArena.Builder builder) {
        return builder;
    }

    @Setup(Level.Trial)
    public void open() {
        graph = ResourceGraph.builder().name("benchmark").build();
        ProtectionDomain pd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        arena = configure(RdmaArena.builder(pd).name("benchmark")).build();
    }

    @TearDown(Level.Trial)
    public void close() {
        arena.flushThreadCaches(); // a collector pass: blocks closed by other threads than their (idle) owners
        ArenaStats stats = arena.stats();
        arena.close();
        graph.close();
        if (stats.liveBlocks() != 0 || stats.uncollectedFrees() != 0) {
            throw new IllegalStateException("the benchmark leaked blocks: " + stats);
        }
        if (graph.liveCount() != 0) throw new IllegalStateException("left behind:\n" + graph.dump());
    }
}
