package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.FixedRecvByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The Mooring transport under a real Netty application — an echo server and its clients made by
 * {@code ServerBootstrap}/{@code Bootstrap} with the Mooring group and channel classes — on soft devices: bytes and
 * their order, many channels at once, close from either side, refused connections, back-pressure, options that do not
 * apply; and every block back in its arena, every loop shut down, once it is over.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class MooringTransportTest {
    private final TransportFixture f = new TransportFixture();
    /** The server's children, to close from the server's side. */
    private final List<Channel> children = new CopyOnWriteArrayList<>();
    /** Whether every buffer the server read was registered memory (the block the NIC wrote). */
    private final AtomicBoolean allReceivedRegistered = new AtomicBoolean(true);

    @AfterEach
    void close() throws InterruptedException {
        f.close();
    }

    @Test
    void echoesAMebibyteOfRandomWritesInOrder() throws Exception {
        Channel server = bindEcho();
        echo(server, 1 << 20, new Random(1), null);
        assertTrue(allReceivedRegistered.get(), "the server read buffers that were not registered memory");
        server.close().sync();
    }

    @Test
    void registeredBuffersOfAnotherProtectionDomainAreCopied() throws Exception {
        // The client's writes come from the server's arena: registered, but not where the client's NIC may read.
        Channel server = bindEcho();
        echo(server, 256 << 10, new Random(2), new MooringByteBufAllocator(f.server.arena));
        server.close().sync();
    }

    @Test
    void manyChannelsEchoAtOnce() throws Exception {
        Channel server = bindEcho();
        List<CompletableFuture<Void>> clients = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            long seed = i;
            clients.add(CompletableFuture.runAsync(() -> {
                try {
                    echo(server, 128 << 10, new Random(seed), null);
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            }));
        }
        CompletableFuture.allOf(clients.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        server.close().sync();
    }

    @Test
    void theServerClosingEndsTheClientsChannel() throws Exception {
        Channel server = bindEcho();
        Channel client = connect(server, new ChannelInboundHandlerAdapter()).sync().channel();
        awaitChildren(1);
        children.getFirst().close().sync();
        assertTrue(client.closeFuture().await(10, TimeUnit.SECONDS), "the client's channel stayed open");
        assertFalse(client.isActive());
        server.close().sync();
    }

    @Test
    void theClientClosingEndsTheServersChild() throws Exception {
        Channel server = bindEcho();
        Channel client = connect(server, new ChannelInboundHandlerAdapter()).sync().channel();
        awaitChildren(1);
        client.close().sync();
        assertTrue(children.getFirst().closeFuture().await(10, TimeUnit.SECONDS), "the server's child stayed open");
        server.close().sync();
    }

    @Test
    void aRefusedConnectionFailsTheConnectFuture() throws Exception {
        int port;
        try (var probe = new ServerSocket(0)) {
            port = probe.getLocalPort(); // free once closed: nobody listens there
        }
        ChannelFuture connect = f.clientBootstrap(new ChannelInboundHandlerAdapter())
                .connect(new InetSocketAddress("127.0.0.1", port));
        assertTrue(connect.await(10, TimeUnit.SECONDS));
        assertInstanceOf(ConnectException.class, connect.cause(), () -> String.valueOf(connect.cause()));
        assertTrue(connect.channel().closeFuture().await(10, TimeUnit.SECONDS), "the failed channel stayed open");
    }

    @Test
    void optionsThatDoNotApplyAreRefusedByName() throws Exception {
        Channel server = bindEcho();
        var e = assertThrows(UnsupportedOperationException.class,
                () -> server.config().setOption(ChannelOption.IP_TOS, 0x10));
        assertTrue(e.getMessage().contains("IP_TOS"), e.getMessage());
        // Socket buffer sizes are hints a session meets with its credit window, read back as set.
        assertTrue(server.config().setOption(ChannelOption.SO_RCVBUF, 1 << 20));
        assertEquals(1 << 20, server.config().getOption(ChannelOption.SO_RCVBUF));
        e = assertThrows(UnsupportedOperationException.class,
                () -> server.config().setOption(ChannelOption.TCP_NODELAY, false)); // a session never delays a message
        assertTrue(e.getMessage().contains("TCP_NODELAY = false"), e.getMessage());
        assertTrue(server.config().setOption(ChannelOption.TCP_NODELAY, true)); // what a session does anyway
        assertTrue(server.config().getOption(ChannelOption.TCP_NODELAY));
        assertTrue(server.config().setOption(ChannelOption.SO_REUSEADDR, true)); // as the endpoint's listener does
        assertThrows(UnsupportedOperationException.class, () -> server.config().setOption(ChannelOption.SO_REUSEADDR,
                false));
        assertTrue(server.config().setOption(ChannelOption.AUTO_READ, true)); // Netty's own options apply
        server.close().sync();
    }

    /** Each end's local address is the address the other end sees it at, as with sockets (a client's was null). */
    @Test
    void aConnectedChannelsLocalAddressIsWhereTheAcceptedChannelSeesItFrom() throws Exception {
        Channel server = bindEcho();
        Channel client = connect(server, new ChannelInboundHandlerAdapter()).sync().channel();
        awaitChildren(1);
        Channel child = children.getFirst();
        var local = (InetSocketAddress) client.localAddress();
        assertEquals(child.remoteAddress(), local);
        assertTrue(local.getPort() > 0 && !local.getAddress().isAnyLocalAddress(), local::toString);
        assertEquals(client.remoteAddress(), child.localAddress());
        client.close().sync();
        assertEquals(local, client.localAddress(), "a closed channel keeps its address, as a socket channel does");
        server.close().sync();
    }

    @Test
    void aReaderThatReadsNothingMakesTheWriterUnwritable() throws Exception {
        // The server reads nothing until told: its session takes no message, the client's credits run out.
        Channel server = f.serverBootstrap(echoInitializer()).childOption(ChannelOption.AUTO_READ, false)
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
        var received = new Received(Integer.MAX_VALUE);
        Channel client = f.clientBootstrap(received)
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(32 << 10, 64 << 10))
                .connect(server.localAddress()).sync().channel();
        long written = 0;
        byte[] chunk = new byte[4096];
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (client.isWritable()) {
            client.writeAndFlush(Unpooled.wrappedBuffer(chunk));
            written += chunk.length;
            assertTrue(System.nanoTime() < deadline, "still writable after " + written + " bytes to a peer that reads none");
            if (written % (64 << 10) == 0) Thread.sleep(10); // let the loop post what was written
        }
        // Bounded: the window in flight, what the session holds for credit, and the water mark.
        assertTrue(written < (4 << 20), written + " bytes written before the channel turned unwritable");
        awaitChildren(1);
        children.getFirst().config().setAutoRead(true); // the server reads and echoes: everything comes back
        received.expect(written).get(30, TimeUnit.SECONDS);
        assertTrue(client.isWritable());
        client.close().sync();
        server.close().sync();
    }

    @Test
    void aReadTakesAtMostTheReceiveAllocatorsGuessInSlicesOfTheReceivedBlock() throws Exception {
        // The server reads whole messages; the client reads through a fixed guess of 1000 bytes, as a socket channel
        // would read 1000 bytes at a time: the 4 KiB message comes up in five parts, each over the block received.
        Channel server = bindWholeMessageEcho();
        var received = new Received(4096);
        Channel client = connectReadingThrough(server, received, 1000);
        byte[] sent = new byte[4096];
        new Random(5).nextBytes(sent);
        client.writeAndFlush(Unpooled.wrappedBuffer(sent)).sync();
        assertArrayEquals(sent, received.expect(sent.length).get(10, TimeUnit.SECONDS));
        assertEquals(List.of(1000, 1000, 1000, 1000, 96), received.reads);
        assertTrue(received.allRegistered, "a part read was not a slice of the registered block");
        client.close().sync();
        server.close().sync();
    }

    @Test
    void aFlushOfSmallWritesGoesOutAsOneMessageAroundABufferSentAsItIs() throws Exception {
        // Ten 100-byte heap writes, one registered buffer of the channel's allocator, ten more, one flush: the copies
        // gather into one message each side of the buffer sent as it is. The echo server writes each message read
        // back as it is, so the client reads the messages' sizes: without gathering, 21 reads of 100 bytes.
        Channel server = bindWholeMessageEcho();
        var received = new Received(2100);
        Channel client = connectReadingThrough(server, received, 4096);
        byte[] sent = new byte[2100];
        new Random(6).nextBytes(sent);
        List<ChannelFuture> writes = new ArrayList<>();
        for (int i = 0; i < 21; i++) {
            ByteBuf buf = i == 10 ? client.alloc().directBuffer(100).writeBytes(sent, i * 100, 100)
                    : Unpooled.wrappedBuffer(sent, i * 100, 100);
            writes.add(client.write(buf));
        }
        client.flush();
        assertArrayEquals(sent, received.expect(sent.length).get(10, TimeUnit.SECONDS));
        assertEquals(List.of(1000, 100, 1000), received.reads);
        for (ChannelFuture w : writes) assertTrue(w.isSuccess(), () -> "write: " + w.cause());
        client.close().sync();
        server.close().sync();
    }

    // ---- the echo application -------------------------------------------------------------------------------

    private Channel bindEcho() throws InterruptedException {
        return f.serverBootstrap(echoInitializer()).bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    }

    private ChannelHandler echoInitializer() {
        return new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel ch) {
                children.add(ch);
                ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        if (!MooringBuffers.isRegistered((ByteBuf) msg)) allReceivedRegistered.set(false);
                        ctx.write(msg); // the received buffer goes back out as it is
                    }

                    @Override
                    public void channelReadComplete(ChannelHandlerContext ctx) {
                        ctx.flush();
                    }
                });
            }
        };
    }

    /** An echo server whose reads take whole messages (up to 4 KiB): it writes back each message as it came. */
    private Channel bindWholeMessageEcho() throws InterruptedException {
        return f.serverBootstrap(echoInitializer())
                .childOption(ChannelOption.RECVBUF_ALLOCATOR, new FixedRecvByteBufAllocator(4096))
                .bind(new InetSocketAddress("127.0.0.1", 0)).sync().channel();
    }

    /** A client whose reads take at most {@code guess} bytes each. */
    private Channel connectReadingThrough(Channel server, Received received, int guess) throws InterruptedException {
        return f.clientBootstrap(received).option(ChannelOption.RECVBUF_ALLOCATOR, new FixedRecvByteBufAllocator(guess))
                .connect(server.localAddress()).sync().channel();
    }

    private ChannelFuture connect(Channel server, ChannelHandler handler) {
        return f.clientBootstrap(handler).connect(server.localAddress());
    }

    /**
     * A buffer of the channel's allocator is sent as it is, so its write succeeds only once its send completed: a writer
     * that refills one buffer after each successful write sends every fill, never a later one, and holds the only
     * reference again by then (Netty's buffer-release contract; before, the write succeeded at the hand-off).
     */
    @Test
    void aBufferRefilledAfterItsWriteSucceededSendsEveryFill() throws Exception {
        Channel server = bindEcho();
        int size = 4096;
        int rounds = 200;
        var received = new Received(size * rounds);
        Channel client = f.clientBootstrap(received).connect(server.localAddress()).sync().channel();
        ByteBuf buf = client.alloc().directBuffer(size);
        try {
            for (int round = 0; round < rounds; round++) {
                buf.clear();
                for (int i = 0; i < size; i++) buf.writeByte(round);
                client.writeAndFlush(buf.retain()).sync();
                assertEquals(1, buf.refCnt(), "round " + round + ": the transport still holds the written buffer");
            }
        } finally {
            buf.release();
        }
        assertFills(received.expect((long) size * rounds).get(30, TimeUnit.SECONDS), size);
        client.close().sync();
        server.close().sync();
    }

    /** Each {@code size} bytes of {@code echoed} are one fill, the n-th filled with n. */
    private static void assertFills(byte[] echoed, int size) {
        for (int at = 0; at < echoed.length; at++) {
            if (echoed[at] != (byte) (at / size)) {
                throw new AssertionError("byte " + at + " of fill " + at / size + " came as " + echoed[at]);
            }
        }
    }

    /**
     * Buffers of the channel's allocator written in one flush are all handed to the session at once, each write
     * succeeding as its send completes: one send at a time (as before) kept a stream of registered writes to a fraction
     * of what the session carries.
     */
    @Test
    void registeredWritesOfOneFlushGoOutTogetherAndEachSucceedsWhenSent() throws Exception {
        Channel server = bindEcho();
        int size = 4096;
        int writes = 8;
        var received = new Received(size * writes);
        var client = (MooringChannel) f.clientBootstrap(received).connect(server.localAddress()).sync().channel();
        List<ChannelFuture> written = new ArrayList<>();
        int posted = client.eventLoop().submit(() -> {
            for (int w = 0; w < writes; w++) {
                ByteBuf buf = client.alloc().directBuffer(size);
                for (int i = 0; i < size; i++) buf.writeByte(w);
                written.add(client.write(buf));
            }
            client.flush();
            return client.postedAsIs(); // in the same task: no send's completion can have reached the loop yet
        }).get(10, TimeUnit.SECONDS);
        assertEquals(writes, posted, "registered writes handed to the session before the first send completed");
        for (ChannelFuture w : written) assertTrue(w.await(10, TimeUnit.SECONDS) && w.isSuccess(), () -> "" + w.cause());
        assertFills(received.expect((long) size * writes).get(30, TimeUnit.SECONDS), size);
        client.close().sync();
        server.close().sync();
    }

    /**
     * Sends {@code bytes} in random writes — heap and direct buffers of {@code allocator} (null: the channel's own),
     * small and above a message — and checks the echo.
     */
    private void echo(Channel server, int bytes, Random random, ByteBufAllocator allocator) throws Exception {
        byte[] sent = new byte[bytes];
        random.nextBytes(sent);
        var received = new Received(bytes);
        var bootstrap = f.clientBootstrap(received);
        if (allocator != null) bootstrap.option(ChannelOption.ALLOCATOR, allocator);
        Channel client = bootstrap.connect(server.localAddress()).sync().channel();
        for (int at = 0; at < bytes; ) {
            int n = Math.min(bytes - at, 1 + random.nextInt(random.nextBoolean() ? 100 : 20_000));
            ByteBuf buf = random.nextBoolean() ? Unpooled.copiedBuffer(sent, at, n)
                    : client.alloc().directBuffer(n).writeBytes(sent, at, n);
            client.write(buf);
            if (random.nextInt(4) == 0) client.flush();
            at += n;
        }
        client.flush();
        assertArrayEquals(sent, received.expect(bytes).get(30, TimeUnit.SECONDS));
        client.close().sync();
    }

    /** What a client reads, in order; completes once the expected count has arrived. */
    private static final class Received extends ChannelInboundHandlerAdapter {
        private final byte[] bytes;
        private int count;
        private long expected = -1;
        private final CompletableFuture<byte[]> done = new CompletableFuture<>();
        /** The size of each read, in order. */
        final List<Integer> reads = new CopyOnWriteArrayList<>();
        volatile boolean allRegistered = true;

        Received(int capacity) {
            this.bytes = capacity == Integer.MAX_VALUE ? null : new byte[capacity];
        }

        synchronized CompletableFuture<byte[]> expect(long n) {
            expected = n;
            check();
            return done;
        }

        @Override
        public synchronized void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf buf = (ByteBuf) msg;
            try {
                int n = buf.readableBytes();
                reads.add(n);
                if (!MooringBuffers.isRegistered(buf)) allRegistered = false;
                if (bytes != null) {
                    if (count + n > bytes.length) {
                        done.completeExceptionally(new AssertionError("more bytes came back than were sent"));
                        return;
                    }
                    buf.readBytes(bytes, count, n);
                }
                count += n;
                check();
            } finally {
                buf.release();
            }
        }

        private void check() {
            if (expected >= 0 && count >= expected) done.complete(bytes);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            done.completeExceptionally(cause);
        }
    }

    private void awaitChildren(int n) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (children.size() < n) {
            assertTrue(System.nanoTime() < deadline, "the server accepted " + children.size() + " of " + n);
            Thread.sleep(5);
        }
    }
}
