package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.ConnectTimeoutException;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.testsuite.transport.socket.SocketConnectionAttemptTest;
import io.netty.util.NetUtil;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.List;

/**
 * Netty's {@link SocketConnectionAttemptTest} on the Mooring transport. Its timeout and cancellation tests dial an
 * outside host that should never answer; here the sandbox's network does answer it (with bytes that are no Mooring
 * handshake), so those two are overridden to take the same steps against a local peer that accepts the TCP connection
 * and stays silent — the handshake never ends, so only the channel's timeout or the cancel can.
 */
class MooringSocketConnectionAttemptTest extends SocketConnectionAttemptTest {
    @Override
    protected List<BootstrapFactory<Bootstrap>> newFactories() {
        return MooringSuitePermutation.clientSocket();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return MooringSuitePermutation.allocators();
    }

    @Override
    public void testConnectTimeout(Bootstrap cb) throws Throwable {
        try (var silent = silentPeer()) {
            ChannelFuture future = cb.handler(new ChannelInboundHandlerAdapter())
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 2000).connect(silent.getLocalSocketAddress());
            try {
                assertTrue(future.await(3000));
                assertInstanceOf(ConnectTimeoutException.class, future.cause());
                assertTrue(future.channel().closeFuture().await(500), "the timed-out channel stayed open");
            } finally {
                future.channel().close();
            }
        }
    }

    @Override
    public void testConnectCancellation(Bootstrap cb) throws Throwable {
        try (var silent = silentPeer()) {
            ChannelFuture future = cb.handler(new ChannelInboundHandlerAdapter())
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 4000).connect(silent.getLocalSocketAddress());
            try {
                assertFalse(future.await(1000), "a connection to a silent peer must not complete: " + future.cause());
                assertTrue(future.cancel(true), "the connect could not be cancelled");
                assertTrue(future.channel().closeFuture().await(500));
                assertTrue(future.isCancelled());
            } finally {
                future.channel().close();
            }
        }
    }

    /** A TCP listener whose backlog takes the connection and that never says a word. */
    private static ServerSocket silentPeer() throws IOException {
        var socket = new ServerSocket();
        socket.bind(new InetSocketAddress(NetUtil.LOCALHOST, 0));
        return socket;
    }
}
