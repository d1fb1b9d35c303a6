package io.mooring.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketCloseForciblyTest;
import java.util.List;

/**
 * Netty's {@link SocketCloseForciblyTest} on the Mooring transport. Netty's version casts the accepted child to
 * {@code SocketChannel} to set {@code SO_LINGER} 0, which a Mooring channel is not (a {@code DuplexChannel} without a
 * socket's config; the cast fails, the child is never closed and the test hangs): the same steps through the channel's
 * options — the server closes each child forcibly, before registering it; the client's channel must close.
 */
class MooringSocketCloseForciblyTest extends SocketCloseForciblyTest {
    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return MooringSuitePermutation.socket();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return MooringSuitePermutation.allocators();
    }

    @Override
    public void testCloseForcibly(ServerBootstrap sb, Bootstrap cb) throws Throwable {
        sb.handler(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                var child = (Channel) msg;
                child.config().setOption(ChannelOption.SO_LINGER, 0);
                child.unsafe().closeForcibly();
            }
        }).childHandler(new ChannelInboundHandlerAdapter());
        cb.handler(new ChannelInboundHandlerAdapter());
        Channel sc = sb.bind().sync().channel();
        cb.connect(sc.localAddress()).channel().closeFuture().syncUninterruptibly();
        sc.close().sync();
    }
}
