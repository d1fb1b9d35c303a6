package io.mooring.netty;

import io.mooring.allocator.RdmaArena;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.testsuite.transport.TestsuitePermutation;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.util.NetUtil;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;

/**
 * Netty's transport testsuite on the Mooring transport, as the epoll and io_uring transports plug in: one combination
 * of a server and a client bootstrap, each side an endpoint of its own on a device ({@link TransportFixture#DEVICE}:
 * soft, or rxe0 in the VM) with a group over it, made once for the whole run (as Netty's own permutations share their
 * groups) and left to the JVM's end. The allocators are Netty's (heap and direct: copied once when written) plus a
 * {@link MooringByteBufAllocator} over the client's arena (posted as they are where the protection domain allows).
 *
 * <p>Netty 4.2.20's {@code io.netty.testsuite.transport.socket} classes run here as {@code Mooring<Class>} subclasses
 * (a few adapted, with why in each). Those that do not run, and why:
 * <ul>
 * <li>{@code SocketFileRegionTest}: a Mooring channel writes {@code ByteBuf}s only, no {@code FileRegion} (the write
 *     is refused, the test waits for it forever).
 * <li>{@code SocketChannelNotYetConnectedTest}, {@code SocketChannelEOFTest}: their peer is a plain
 *     {@code java.net.ServerSocket} (no session handshake), and one binds the client to a local address, which a
 *     session does not have.
 * <li>{@code SocketSslEchoTest} runs over every 7th of its permutations ({@link MooringSocketSslEchoTest}): all of
 *     them outlast the build's fork timeout on this machine. {@code SocketSslSessionReuseTest},
 *     {@code SocketSslClientRenegotiateTest} and {@code SocketSslLargeCertificateTest}: not run yet.
 * <li>{@code SocketAddressesTest} (domain socket addresses), {@code AbstractSocketReuseFdTest} (file descriptors),
 *     the {@code Datagram*} tests: nothing of theirs exists on a session. {@code ServerSocketSuspendTest}: its clients
 *     are plain {@code java.net.Socket}s, which make no session; not adapted yet.
 * </ul>
 */
final class MooringSuitePermutation {
    private static final ResourceGraph GRAPH = ResourceGraph.builder().name("netty-testsuite").build();
    private static final Side SERVER = new Side();
    private static final Side CLIENT = new Side();

    private MooringSuitePermutation() {}

    private static final class Side {
        final RdmaEndpoint endpoint;
        final EventLoopGroup group;

        Side() {
            ProtectionDomain pd = RdmaDevices.open(TransportFixture.DEVICE, GRAPH).allocateProtectionDomain();
            RdmaArena arena = RdmaArena.builder(pd).chunkSize(4 << 20)
                    .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
            endpoint = RdmaEndpoint.builder(pd, arena).build();
            group = new MultiThreadIoEventLoopGroup(2, MooringIoHandler.newFactory(endpoint));
        }
    }

    static List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> socket() {
        return List.of(new BootstrapComboFactory<>() {
            @Override
            public ServerBootstrap newServerInstance() {
                return new ServerBootstrap().group(SERVER.group).channel(MooringServerChannel.class);
            }

            @Override
            public Bootstrap newClientInstance() {
                return new Bootstrap().group(CLIENT.group).channel(MooringChannel.class);
            }
        });
    }

    static List<BootstrapFactory<ServerBootstrap>> serverSocket() {
        return List.of(() -> new ServerBootstrap().group(SERVER.group).channel(MooringServerChannel.class));
    }

    /** A bare session peer on the server side's endpoint: for a client channel to connect to, as to a ServerSocket. */
    static RawSessionPeer serverSidePeer() {
        return new RawSessionPeer(SERVER.endpoint);
    }

    /** Listens on the server side's endpoint, beside the server channels. */
    static RdmaListener listen() throws IOException {
        return SERVER.endpoint.listen(new InetSocketAddress(NetUtil.LOCALHOST, 0));
    }

    /** A bare session peer on the client side's endpoint: to connect to a server channel, as a java.net.Socket. */
    static RawSessionPeer clientSidePeer() {
        return new RawSessionPeer(CLIENT.endpoint);
    }

    static List<BootstrapFactory<Bootstrap>> clientSocket() {
        return List.of(() -> new Bootstrap().group(CLIENT.group).channel(MooringChannel.class));
    }

    static List<ByteBufAllocator> allocators() {
        var all = new ArrayList<>(TestsuitePermutation.allocator());
        all.add(new MooringByteBufAllocator(CLIENT.endpoint.arena()));
        return all;
    }
}
