package io.mooring.netty;

import io.mooring.allocator.ArenaStats;
import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import io.netty.buffer.ByteBufAllocator;
import java.util.EnumSet;
import java.util.concurrent.TimeUnit;

/**
 * A soft device, an arena and an allocator of their own per test. Closing checks that every block came back to the
 * arena (none live, none waiting for collection) and that the graph is left empty.
 */
final class BufferFixture {
    final ResourceGraph graph = ResourceGraph.builder().name("netty-test").build();
    final DeviceContext context = RdmaDevices.open("soft:soft0", graph);
    final RdmaArena arena = RdmaArena.builder(context.allocateProtectionDomain()).chunkSize(1 << 20)
            .access(EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_READ, Access.REMOTE_WRITE)).build();
    final MooringByteBufAllocator allocator;

    BufferFixture(ReleasePattern releases) {
        allocator = new MooringByteBufAllocator(arena, ByteBufAllocator.DEFAULT, releases);
    }

    BufferFixture() {
        this(ReleasePattern.SAME_THREAD);
    }

    /** Blocks out of the arena now, once the calling thread collected what other threads released for it. */
    long liveBlocks() {
        arena.flushThreadCaches();
        return arena.stats().liveBlocks();
    }

    /**
     * Waits until every block is back in the arena: blocks released by other threads than their owners are collected
     * by the arena's collector within milliseconds; fails after a generous 20 s with the arena's counts.
     */
    void awaitAllBlocksBack() throws InterruptedException {
        awaitAllBlocksBack(arena);
    }

    /** {@link #awaitAllBlocksBack()} of any arena. */
    static void awaitAllBlocksBack(RdmaArena arena) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            arena.flushThreadCaches();
            ArenaStats s = arena.stats();
            if (s.liveBlocks() == 0 && s.uncollectedFrees() == 0) return;
            if (System.nanoTime() > deadline) throw new AssertionError("blocks still out after 20 s: " + s);
            Thread.sleep(5);
        }
    }

    void close() throws InterruptedException {
        try {
            awaitAllBlocksBack();
        } finally {
            arena.close();
            graph.close();
        }
        if (graph.liveCount() != 0) throw new AssertionError("left behind:\n" + graph.dump());
    }
}
