package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.RdmaArena;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.ChannelHandler;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import java.util.EnumSet;
import java.util.concurrent.TimeUnit;

/**
 * Two sides on devices of their own, each an arena, an endpoint and an event loop group of the Mooring transport: soft
 * ones, or those {@code -Dmooring.netty.test.device} names (in the rxe VM: {@code ibv:rxe0}, see {@code .ci/run}).
 * Closing shuts the groups down, closes the endpoints and checks that every block came back to each arena and that
 * the graph is left empty.
 */
final class TransportFixture {
    /** The device both sides open. */
    static final String DEVICE = System.getProperty("mooring.netty.test.device", "soft:soft0");

    final ResourceGraph graph = ResourceGraph.builder().name("netty-transport-test").build();
    final Side server = new Side();
    final Side client = new Side();

    final class Side {
        final RdmaArena arena;
        final RdmaEndpoint endpoint;
        final EventLoopGroup group;

        Side() {
            ProtectionDomain pd = RdmaDevices.open(DEVICE, graph).allocateProtectionDomain();
            arena = RdmaArena.builder(pd).chunkSize(1 << 20).access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND))
                    .build();
            endpoint = RdmaEndpoint.builder(pd, arena).build();
            group = new MultiThreadIoEventLoopGroup(2, MooringIoHandler.newFactory(endpoint));
        }

        void close() throws InterruptedException {
            try {
                group.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
                assertTrue(group.isTerminated(), "the event loops still run");
                awaitNoSessions(); // the channels closed theirs: the endpoint's close is not what ends them
                endpoint.close();
                BufferFixture.awaitAllBlocksBack(arena); // received, sent or allocated by the pipeline
            } finally {
                arena.close();
            }
        }

        private void awaitNoSessions() throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!endpoint.sessions().isEmpty()) {
                if (System.nanoTime() > deadline) throw new AssertionError("sessions left open: " + endpoint.sessions());
                Thread.sleep(5);
            }
        }
    }

    ServerBootstrap serverBootstrap(ChannelHandler childHandler) {
        return new ServerBootstrap().group(server.group).channel(MooringServerChannel.class).childHandler(childHandler);
    }

    Bootstrap clientBootstrap(ChannelHandler handler) {
        return new Bootstrap().group(client.group).channel(MooringChannel.class).handler(handler);
    }

    void close() throws InterruptedException {
        try {
            client.close();
        } finally {
            server.close();
            graph.close();
        }
        assertEquals(0, graph.liveCount(), graph::dump);
    }
}
