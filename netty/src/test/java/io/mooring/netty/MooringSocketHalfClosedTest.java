package io.mooring.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelInputShutdownReadComplete;
import io.netty.channel.socket.DuplexChannel;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketHalfClosedTest;
import io.netty.util.ReferenceCountUtil;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** Netty's {@link SocketHalfClosedTest} on the Mooring transport (see {@link MooringSuitePermutation}). */
class MooringSocketHalfClosedTest extends SocketHalfClosedTest {
    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return MooringSuitePermutation.socket();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return MooringSuitePermutation.allocators();
    }

    /**
     * Netty's version casts the server's child to {@code SocketChannel}, which a Mooring channel is not (a session has
     * no socket options to configure; it is a {@link DuplexChannel}): the same steps and check through
     * {@code DuplexChannel} — the child, with {@code SO_LINGER} 1, shuts its output down at once; the client, half-closed,
     * answers the end with 16 bytes and closes; the child must still read them.
     */
    @Test
    @Override
    public void testHalfClosureReceiveDataOnFinalWait2StateWhenSoLingerSet(TestInfo testInfo) throws Throwable {
        run(testInfo, this::halfClosureReceivesDataWhenSoLingerSet);
    }

    private void halfClosureReceivesDataWhenSoLingerSet(ServerBootstrap sb, Bootstrap cb) throws Throwable {
        var childRead = new CountDownLatch(1);
        Channel server = sb.childOption(ChannelOption.SO_LINGER, 1).childHandler(new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel ch) {
                ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        ((DuplexChannel) ctx.channel()).shutdownOutput();
                    }

                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        ReferenceCountUtil.release(msg);
                        childRead.countDown();
                    }
                });
            }
        }).bind().sync().channel();
        Channel client = cb.option(ChannelOption.ALLOW_HALF_CLOSURE, true).handler(new ChannelInboundHandlerAdapter() {
            @Override
            public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
                if (evt == ChannelInputShutdownEvent.INSTANCE) ctx.writeAndFlush(ctx.alloc().buffer().writeZero(16));
                if (evt == ChannelInputShutdownReadComplete.INSTANCE) ctx.close();
            }
        }).connect(server.localAddress()).sync().channel();
        try {
            childRead.await();
        } finally {
            client.close().sync();
            server.close().sync();
        }
    }
}
