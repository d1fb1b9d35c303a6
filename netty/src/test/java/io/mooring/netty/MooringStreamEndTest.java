package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelInputShutdownReadComplete;
import io.netty.channel.socket.ChannelOutputShutdownEvent;
import io.netty.channel.socket.DuplexChannel;
import java.io.ByteArrayOutputStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * How a Mooring channel's byte stream ends, as a TCP socket's does: what a write reported as done arrives even if the
 * writer closes right after it; half-closure either way, with and without {@code ALLOW_HALF_CLOSURE}; the options.
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

    @Test
    void aChildThatWritesAndClosesAsItBecomesActiveDeliversEveryByte() throws Exception {
        // The child writes as soon as it is active — before the client's connect may have completed — then closes.
        byte[] sent = new byte[2048];
        new Random(8).nextBytes(sent);
        Channel server = f.serverBootstrap(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelActive(ChannelHandlerContext ctx) {
                ctx.write(Unpooled.wrappedBuffer(sent, 0, 1000));
                ctx.writeAndFlush(Unpooled.wrappedBuffer(sent, 1000, 1048)).addListener(ChannelFutureListener.CLOSE);
            }
        }).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        var client = new Collected();
        f.clientBootstrap(client).connect(server.localAddress()).sync();
        assertArrayEquals(sent, client.untilInactive().get(10, TimeUnit.SECONDS));
        server.close().sync();
    }

    @Test
    void aMessageTakenAheadOfAReadIsFreedByTheClose() throws Exception {
        // Auto-read off: a read() delivers the first message and takes the second ahead of the next read. The close
        // must free it (the fixture checks every block came back).
        Channel server = f.serverBootstrap(collectingChild()).childOption(ChannelOption.AUTO_READ, false)
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        Channel client = f.clientBootstrap(new ChannelInboundHandlerAdapter()).connect(server.localAddress()).sync()
                .channel();
        client.writeAndFlush(Unpooled.wrappedBuffer(new byte[] {1})).sync();
        client.writeAndFlush(Unpooled.wrappedBuffer(new byte[] {2})).sync();
        var child = (MooringChannel) this.child.get(10, TimeUnit.SECONDS);
        child.read();
        assertArrayEquals(new byte[] {1}, collected.untilRead(1).get(10, TimeUnit.SECONDS));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!child.eventLoop().submit(child::holdsMessageAhead).get()) {
            assertTrue(System.nanoTime() < deadline, "the second message was not taken ahead");
            Thread.sleep(5);
        }
        child.close().sync();
        client.close().sync();
        server.close().sync();
    }

    @Test
    void shutdownOutputEndsThePeersInputAfterEveryByteAndTheOtherWayGoesOn() throws Exception {
        // The child reads with half-closure: the client's end comes after all its bytes (more than the window, so some
        // may still wait for credit when the end is sent), then the child answers over the direction still open.
        Channel server = f.serverBootstrap(collectingChild()).childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        var answer = new Collected();
        var client = (DuplexChannel) f.clientBootstrap(answer).connect(server.localAddress()).sync().channel();
        byte[] sent = new byte[40 * 1024];
        new Random(4).nextBytes(sent);
        ChannelFuture last = null;
        for (int at = 0; at < sent.length; at += 1024) last = client.writeAndFlush(Unpooled.wrappedBuffer(sent, at, 1024));
        last.sync(); // as for a socket, what is not written yet when the output shuts down fails
        client.shutdownOutput().sync();
        assertTrue(client.isOutputShutdown() && !client.isInputShutdown() && client.isActive());

        var child = (DuplexChannel) this.child.get(10, TimeUnit.SECONDS);
        assertArrayEquals(sent, collected.untilInputShutdown().get(30, TimeUnit.SECONDS));
        assertTrue(child.isInputShutdown() && !child.isOutputShutdown() && child.isActive());
        assertEquals(List.of(ChannelInputShutdownEvent.INSTANCE, ChannelInputShutdownReadComplete.INSTANCE),
                collected.events);
        child.writeAndFlush(Unpooled.wrappedBuffer(new byte[] {7, 8, 9})).sync();
        child.shutdownOutput().sync();
        // Without half-closure (the client's default) the peer's end closes the channel, after what came before it.
        assertArrayEquals(new byte[] {7, 8, 9}, answer.untilInactive().get(10, TimeUnit.SECONDS));
        assertEquals(List.of(ChannelOutputShutdownEvent.INSTANCE), answer.events); // its own; no input shutdown
        child.close().sync();
        server.close().sync();
    }

    @Test
    void shutdownInputFreesWhatStillComesAndLetsTheChannelWrite() throws Exception {
        Channel server = f.serverBootstrap(collectingChild()).bind(new InetSocketAddress("127.0.0.1", 0)).sync()
                .channel();
        var answer = new Collected();
        var client = (DuplexChannel) f.clientBootstrap(answer).connect(server.localAddress()).sync().channel();
        client.shutdownInput().sync();
        assertTrue(client.isInputShutdown() && !client.isOutputShutdown());
        // The server writes far more than the window: the client frees each message, returning its credit.
        Channel child = this.child.get(10, TimeUnit.SECONDS);
        for (int i = 0; i < 200; i++) child.write(Unpooled.wrappedBuffer(new byte[1024]));
        assertTrue(child.writeAndFlush(Unpooled.EMPTY_BUFFER).await(10, TimeUnit.SECONDS), "the client took no more");
        client.writeAndFlush(Unpooled.wrappedBuffer(new byte[] {1, 2})).sync();
        assertArrayEquals(new byte[] {1, 2}, collected.untilRead(2).get(10, TimeUnit.SECONDS));
        child.close().sync(); // the end of the client's input closes it: no half-closure
        assertTrue(client.closeFuture().await(10, TimeUnit.SECONDS), "the client stayed open after the peer's close");
        assertEquals(0, answer.bytes.size(), "bytes were read after the input was shut down");
        server.close().sync();
    }

    @Test
    void halfClosureAndLingerAreOptions() throws Exception {
        Channel server = f.serverBootstrap(collectingChild()).bind(new InetSocketAddress("127.0.0.1", 0)).sync()
                .channel();
        Channel client = f.clientBootstrap(new ChannelInboundHandlerAdapter()).option(ChannelOption.SO_LINGER, 3)
                .option(ChannelOption.ALLOW_HALF_CLOSURE, true).connect(server.localAddress()).sync().channel();
        assertEquals(3, client.config().getOption(ChannelOption.SO_LINGER));
        assertTrue(client.config().getOption(ChannelOption.ALLOW_HALF_CLOSURE));
        assertEquals(Boolean.FALSE, child.get(10, TimeUnit.SECONDS).config().getOption(ChannelOption.ALLOW_HALF_CLOSURE));
        var e = assertThrows(UnsupportedOperationException.class,
                () -> client.config().setOption(ChannelOption.SO_LINGER, -2));
        assertTrue(e.getMessage().contains("SO_LINGER = -2"), e.getMessage());
        client.close().sync();
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
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final List<Object> events = new CopyOnWriteArrayList<>();
        private final CompletableFuture<byte[]> done = new CompletableFuture<>();
        private final CompletableFuture<byte[]> inputShutdown = new CompletableFuture<>();
        private final CompletableFuture<byte[]> readEnough = new CompletableFuture<>();
        private int enough = -1;

        CompletableFuture<byte[]> untilInactive() {
            return done;
        }

        /** What was read, once the input is shut down and everything before its end read. */
        CompletableFuture<byte[]> untilInputShutdown() {
            return inputShutdown;
        }

        /** The first {@code n} bytes, once read. */
        synchronized CompletableFuture<byte[]> untilRead(int n) {
            enough = n;
            checkEnough();
            return readEnough;
        }

        private synchronized void checkEnough() {
            if (enough >= 0 && bytes.size() >= enough) readEnough.complete(bytes.toByteArray());
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
            events.add(evt);
            if (evt == ChannelInputShutdownReadComplete.INSTANCE) inputShutdown.complete(bytes.toByteArray());
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf buf = (ByteBuf) msg;
            byte[] read = new byte[buf.readableBytes()];
            buf.readBytes(read).release();
            bytes.writeBytes(read);
            checkEnough();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            done.complete(bytes.toByteArray());
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            done.completeExceptionally(cause);
            inputShutdown.completeExceptionally(cause);
        }
    }
}
