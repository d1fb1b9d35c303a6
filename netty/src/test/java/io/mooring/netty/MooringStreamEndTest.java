package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * How a Mooring channel's byte stream ends, as a TCP socket's does: what a write reported as done arrives even if the
 * writer closes right after it.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class MooringStreamEndTest {
    private final TransportFixture f = new TransportFixture();
    private final CompletableFuture<Channel> child = new CompletableFuture<>();
    private final Collected collected = new Collected();

    @AfterEach
    void close() throws InterruptedException {
        f.close();
    }

    @Test
    void aCloseAfterWritesDeliversEveryByteTheWritesReportedDone() throws Exception {
        // The server reads nothing yet: the session's window fills and later messages wait in the client's session for
        // credit. Their writes are done all the same, so the close must let them go out before the session ends.
        Channel server = f.serverBootstrap(collectingChild()).childOption(ChannelOption.AUTO_READ, false)
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        Channel client = f.clientBootstrap(new ChannelInboundHandlerAdapter()).connect(server.localAddress()).sync()
                .channel();
        byte[] sent = new byte[(MooringChannel.MAX_IN_FLIGHT - 1) * 1024];
        new Random(3).nextBytes(sent);
        List<ChannelFuture> writes = new ArrayList<>();
        for (int at = 0; at < sent.length; at += 1024) writes.add(client.writeAndFlush(Unpooled.wrappedBuffer(sent, at, 1024)));
        for (ChannelFuture w : writes) assertTrue(w.await(10, TimeUnit.SECONDS) && w.isSuccess(), () -> "write: " + w.cause());
        client.close().sync();

        child.get(10, TimeUnit.SECONDS).config().setAutoRead(true);
        assertArrayEquals(sent, collected.untilInactive().get(30, TimeUnit.SECONDS));
        server.close().sync();
    }

    private ChannelInitializer<Channel> collectingChild() {
        return new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel ch) {
                ch.pipeline().addLast(collected);
                child.complete(ch);
            }
        };
    }

    /** The bytes a channel read, handed over when it goes inactive. */
    @ChannelHandler.Sharable // added to one child per test
    private static final class Collected extends ChannelInboundHandlerAdapter {
        private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        private final CompletableFuture<byte[]> done = new CompletableFuture<>();

        CompletableFuture<byte[]> untilInactive() {
            return done;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf buf = (ByteBuf) msg;
            byte[] read = new byte[buf.readableBytes()];
            buf.readBytes(read).release();
            bytes.writeBytes(read);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            done.complete(bytes.toByteArray());
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            done.completeExceptionally(cause);
        }
    }
}
