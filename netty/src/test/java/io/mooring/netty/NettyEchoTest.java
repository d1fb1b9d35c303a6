package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.local.LocalAddress;
import io.netty.channel.local.LocalChannel;
import io.netty.channel.local.LocalIoHandler;
import io.netty.channel.local.LocalServerChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A real Netty application — an echo server and its client — with the allocator chosen by
 * {@code ChannelOption.ALLOCATOR} alone, over Netty's local and NIO transports: the bytes come back, the buffers
 * the pipeline reads are registered, and every block is back in the arena once the channels are closed.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class NettyEchoTest {
    private static final int BYTES = 1 << 20;
    private final BufferFixture f = new BufferFixture();

    @AfterEach
    void close() throws InterruptedException {
        f.close();
    }

    @Test
    void echoOverTheLocalTransport() throws Exception {
        echo(LocalIoHandler.newFactory(), LocalServerChannel.class, LocalChannel.class, new LocalAddress("echo-test"));
    }

    @Test
    void echoOverTheNioTransport() throws Exception {
        echo(NioIoHandler.newFactory(), NioServerSocketChannel.class, NioSocketChannel.class,
                new InetSocketAddress("127.0.0.1", 0));
    }

    private void echo(IoHandlerFactory io, Class<? extends ServerChannel> serverType, Class<? extends Channel> type,
                      SocketAddress address) throws Exception {
        byte[] sent = new byte[BYTES];
        new Random(27).nextBytes(sent);
        var received = new CompletableFuture<byte[]>();
        var unregistered = new AtomicInteger(); // buffers read by either side that were not the allocator's
        EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, io);
        try {
            Channel server = new ServerBootstrap().group(group).channel(serverType)
                    .option(ChannelOption.ALLOCATOR, f.allocator)
                    .childOption(ChannelOption.ALLOCATOR, f.allocator)
                    .childHandler(new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                            if (!MooringBuffers.isRegistered((ByteBuf) msg)) unregistered.incrementAndGet();
                            ctx.writeAndFlush(msg); // the echo: the same buffer goes back out
                        }
                    })
                    .bind(address).sync().channel();
            Channel client = new Bootstrap().group(group).channel(type)
                    .option(ChannelOption.ALLOCATOR, f.allocator)
                    .handler(new Collector(sent.length, received, unregistered))
                    .connect(server.localAddress()).sync().channel();
            for (int at = 0; at < sent.length; at += 8192) { // in many writes, each a buffer of the allocator
                client.write(client.alloc().directBuffer(8192).writeBytes(sent, at, Math.min(8192, sent.length - at)));
            }
            client.flush();
            assertArrayEquals(sent, received.get(60, TimeUnit.SECONDS));
            assertEquals(0, unregistered.get(), "every buffer the pipelines read came from the allocator");
            client.close().sync();
            server.close().sync();
        } finally {
            group.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
        }
        f.awaitAllBlocksBack();
    }

    /** The client's side: gathers what comes back, releasing each buffer once copied out. */
    private static final class Collector extends ChannelInboundHandlerAdapter {
        private final ByteBuf gathered;
        private final CompletableFuture<byte[]> done;
        private final AtomicInteger unregistered;

        Collector(int expected, CompletableFuture<byte[]> done, AtomicInteger unregistered) {
            this.gathered = Unpooled.buffer(expected);
            this.done = done;
            this.unregistered = unregistered;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf buf = (ByteBuf) msg;
            if (!MooringBuffers.isRegistered(buf)) unregistered.incrementAndGet();
            gathered.writeBytes(buf);
            buf.release();
            if (gathered.writableBytes() == 0) done.complete(ByteBufUtil.getBytes(gathered));
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            done.completeExceptionally(cause);
        }
    }
}
