package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketConnectTest;
import java.net.SocketAddress;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Netty's {@link SocketConnectTest} on the Mooring transport. Its {@code TCP_FASTOPEN} tests run without the option,
 * as Netty's own transports without fast open run them ({@link #enableTcpFastOpen}): data written before the connect
 * goes out once it is made, which is what they check. {@code testLocalAddressAfterConnect} is adapted: a connected
 * Mooring channel has no local address (the endpoint connects from no address of its own; {@code RdmaSession} names
 * only its peer), so the same steps check that an accepted channel's is the server's bound address and a connected
 * one's is null, both before and after the connect.
 */
class MooringSocketConnectTest extends SocketConnectTest {
    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return MooringSuitePermutation.socket();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return MooringSuitePermutation.allocators();
    }

    /** A session has no fast open: the tests run as on a transport without it (TFO changes nothing they observe). */
    @Override
    protected void enableTcpFastOpen(ServerBootstrap sb, Bootstrap cb) {
    }

    @Override
    public void testLocalAddressAfterConnect(ServerBootstrap sb, Bootstrap cb) throws Throwable {
        var accepted = new CompletableFuture<SocketAddress>();
        Channel server = sb.childHandler(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                accepted.complete(ctx.channel().localAddress());
            }
        }).bind().sync().channel();
        Channel client = cb.handler(new ChannelInboundHandlerAdapter()).register().sync().channel();
        try {
            assertNull(client.localAddress());
            assertNull(client.remoteAddress());
            client.connect(server.localAddress()).sync();
            assertNull(client.localAddress());
            assertNotNull(client.remoteAddress());
            assertEquals(server.localAddress(), accepted.get(10, TimeUnit.SECONDS));
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }
}
