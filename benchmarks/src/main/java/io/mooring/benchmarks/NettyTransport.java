package io.mooring.benchmarks;

import io.mooring.allocator.Block;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.netty.MooringChannel;
import io.mooring.netty.MooringIoHandler;
import io.mooring.netty.MooringServerChannel;
import io.mooring.verbs.WorkCompletion;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * What Netty costs on top of Mooring (issue 27): the same traffic over two bare {@link RdmaSession}s and over a
 * {@link MooringChannel} to a {@link MooringServerChannel}, on the soft provider, in one run.
 *
 * <ul>
 * <li>{@code rawRoundTrip} / {@code nettyRoundTrip}: one message of {@code size} bytes sent and its echo received, the
 *     caller waiting. Raw: {@code sendAsync} of one block, the peer's dispatcher sending the received block back as
 *     it is. Netty: a buffer of the channel's allocator (a {@code MooringByteBufAllocator}, posted as it is) written
 *     and flushed, echoed by a Netty server's handler writing the received buffer back (Netty's {@code EchoServer}).
 * <li>{@code rawStreams} / {@code nettyStreams}: {@value #STREAMS} streams each sending its next 4 KiB message once
 *     its last one's send completed, into one session or one channel, a peer counting what arrives; one operation is
 *     one message received. Netty: the next write starts in the last write's listener, on the loop; {@code buffers}
 *     is the allocator the writes come from (Mooring's, posted as they are, or Netty's pooled one, copied and gathered).
 * <li>{@code rawRoundTripChain} / {@code nettyRoundTripChain}: the same round trips, {@value #CHAIN} in a row, each
 *     started where the last echo arrived — on the client's dispatcher (raw) or its event loop (Netty) — so that the
 *     caller's hand-off to the loop and back (which the raw caller does not pay: it posts itself, and polls for its own
 *     completion) is paid once per chain, not per round trip.
 * </ul>
 * Each iteration prints how many blocks both arenas handed out per operation ({@link TransportSides#reportBlocks}):
 * a Netty round trip takes one more than a raw one (the application's buffer), and any copy would add one.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(jvmArgsAppend = {"-Djmh.executor=CUSTOM", "-Djmh.executor.class=io.mooring.benchmarks.FastThreadExecutor",
        "-Dio.netty.leakDetection.level=disabled"})
@Threads(1)
public class NettyTransport {
    static final int STREAMS = 64;
    static final int STREAM_MESSAGE = 4096;
    /** Messages per invocation of a streams benchmark: long enough that filling and draining the streams is small. */
    static final int BURST = 1024;
    /** Round trips per invocation of a chain benchmark. */
    static final int CHAIN = 256;

    /** The caller's side of a wait: a count another thread raises, and the caller parked until it is high enough. */
    static final class Arrivals {
        private volatile long count;
        private volatile Thread waiter;

        /** Adds {@code n} (one thread at a time) and wakes the caller. */
        void add(long n) {
            count += n;
            LockSupport.unpark(waiter);
        }

        long count() {
            return count;
        }

        void awaitAtLeast(long target) {
            waiter = Thread.currentThread();
            while (count < target) LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(100));
        }
    }

    /** Two sessions between the endpoints. */
    abstract static class Sessions extends TransportSides {
        RdmaSession client;
        RdmaSession server;

        void connect() {
            openEndpoints();
            try (RdmaListener listener = serverEndpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
                CompletableFuture<RdmaSession> accepted = listener.acceptAsync();
                client = clientEndpoint.connectAsync(listener.address()).join();
                server = accepted.join();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        /**
         * Hands every message the server receives to {@code take} (on the dispatcher), looping without recursion while
         * messages are there already, until the session ends.
         */
        void serve(java.util.function.Consumer<InboundMessage> take) {
            while (true) {
                CompletableFuture<InboundMessage> next = server.receiveAsync();
                if (!next.isDone()) {
                    next.whenComplete((m, e) -> {
                        if (e == null) {
                            take.accept(m);
                            serve(take);
                        }
                    });
                    return;
                }
                if (next.isCompletedExceptionally()) return;
                take.accept(next.join());
            }
        }

        void closeSessions() throws InterruptedException {
            client.close();
            server.close();
            closeEndpoints();
        }
    }

    /** Raw sessions, the server echoing each message back in the block it arrived in. */
    @State(Scope.Benchmark)
    public static class RawEcho extends Sessions {
        @Param({"64", "4096"})
        public int size;
        Block message;

        @Override
        String label() {
            return "raw echo, " + size + " B";
        }

        @Setup(Level.Trial)
        public void open() {
            connect();
            serve(m -> server.sendAsync(m.block(), m.length()).whenComplete((wc, e) -> m.close()));
            message = clientArena.allocate(size);
            message.segment().fill((byte) 0x2a);
        }

        @TearDown(Level.Trial)
        public void close() throws InterruptedException {
            message.close();
            closeSessions();
        }
    }

    @Benchmark
    public void rawRoundTrip(RawEcho raw) {
        CompletableFuture<InboundMessage> reply = raw.client.receiveAsync();
        CompletableFuture<WorkCompletion> sent = raw.client.sendAsync(raw.message, raw.size);
        try (InboundMessage echo = reply.join()) {
            if (echo.length() != raw.size) throw new IllegalStateException("echoed " + echo.length() + " bytes");
        }
        sent.join();
        raw.operations++;
    }

    /** Raw echo, the client's dispatcher sending the next message where the last one's echo arrived. */
    @State(Scope.Benchmark)
    public static class RawEchoChain extends RawEcho {
        final Arrivals chains = new Arrivals();
        int left; // the client's dispatcher's, once a chain started

        @Override
        String label() {
            return "raw echo chain, " + size + " B";
        }

        /** Sends the next message of the chain, or ends it. */
        void next() {
            if (left-- == 0) {
                chains.add(1);
                return;
            }
            CompletableFuture<InboundMessage> reply = client.receiveAsync();
            CompletableFuture<WorkCompletion> sent = client.sendAsync(message, size);
            reply.whenComplete((m, e) -> {
                if (e != null) return;
                m.close();
                sent.whenComplete((wc, f) -> next()); // the block is the next send's once this one completed
            });
        }
    }

    @Benchmark
    @OperationsPerInvocation(CHAIN)
    public void rawRoundTripChain(RawEchoChain raw) {
        long target = raw.chains.count() + 1;
        raw.left = CHAIN;
        raw.next();
        raw.chains.awaitAtLeast(target);
        raw.operations += CHAIN;
    }

    /** A Mooring channel to a Netty server over the Mooring transport, one event loop each side. */
    abstract static class Channels extends TransportSides {
        final Arrivals arrivals = new Arrivals();
        EventLoopGroup serverGroup;
        EventLoopGroup clientGroup;
        Channel server;
        Channel client;

        /** Connects a channel with {@code handler} to a server whose accepted channel gets {@code child}. */
        void connect(ChannelHandler child, ChannelHandler handler) throws InterruptedException {
            openEndpoints();
            serverGroup = new MultiThreadIoEventLoopGroup(1, MooringIoHandler.newFactory(serverEndpoint));
            clientGroup = new MultiThreadIoEventLoopGroup(1, MooringIoHandler.newFactory(clientEndpoint));
            server = new ServerBootstrap().group(serverGroup).channel(MooringServerChannel.class).childHandler(child)
                    .bind(InetAddress.getLoopbackAddress(), 0).sync().channel();
            client = new Bootstrap().group(clientGroup).channel(MooringChannel.class).handler(handler)
                    .connect(server.localAddress()).sync().channel();
        }

        @TearDown(Level.Trial)
        public void close() throws InterruptedException {
            client.close().sync();
            server.close().sync();
            clientGroup.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
            serverGroup.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
            closeEndpoints();
        }
    }

    /** A Mooring channel to Netty's echo server, over the Mooring transport. */
    @State(Scope.Benchmark)
    public static class NettyEcho extends Channels {
        @Param({"64", "4096"})
        public int size;

        @Override
        String label() {
            return "netty echo, " + size + " B";
        }

        @Setup(Level.Trial)
        public void open() throws InterruptedException {
            connect(new Echo(), new Count(arrivals));
        }
    }

    @Benchmark
    public void nettyRoundTrip(NettyEcho netty) {
        ByteBuf message = netty.client.alloc().directBuffer(netty.size);
        message.setLong(0, 0x2a2a2a2a2a2a2a2aL);
        message.writerIndex(netty.size);
        long target = netty.arrivals.count() + netty.size;
        netty.client.writeAndFlush(message, netty.client.voidPromise());
        netty.arrivals.awaitAtLeast(target);
        netty.operations++;
    }

    /** Netty's echo, the client's loop writing the next message where the last one's echo was read. */
    @State(Scope.Benchmark)
    public static class NettyEchoChain extends Channels {
        @Param({"64", "4096"})
        public int size;
        final Arrivals chains = new Arrivals();
        int left;    // the client loop's
        int echoed;  // bytes of the message under way echoed so far (the loop's)

        @Override
        String label() {
            return "netty echo chain, " + size + " B";
        }

        @Setup(Level.Trial)
        public void open() throws InterruptedException {
            connect(new Echo(), new ChannelInboundHandlerAdapter() {
                @Override
                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                    echoed += ((ByteBuf) msg).readableBytes();
                    ((ByteBuf) msg).release();
                    if (echoed == size) {
                        echoed = 0;
                        next();
                    }
                }
            });
        }

        /** Writes the next message of the chain (on the loop), or ends it. */
        void next() {
            if (left-- == 0) {
                chains.add(1);
                return;
            }
            ByteBuf message = client.alloc().directBuffer(size);
            message.setLong(0, 0x2a2a2a2a2a2a2a2aL);
            message.writerIndex(size);
            client.writeAndFlush(message, client.voidPromise());
        }
    }

    @Benchmark
    @OperationsPerInvocation(CHAIN)
    public void nettyRoundTripChain(NettyEchoChain netty) {
        long target = netty.chains.count() + 1;
        netty.client.eventLoop().execute(() -> {
            netty.left = CHAIN;
            netty.next();
        });
        netty.chains.awaitAtLeast(target);
        netty.operations += CHAIN;
    }

    /** Netty's {@code EchoServerHandler}: what is read is written back, flushed at the end of each read. */
    @ChannelHandler.Sharable
    static final class Echo extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ctx.write(msg, ctx.voidPromise());
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }
    }

    /** Counts the bytes read into {@link Arrivals} and releases them. */
    static final class Count extends ChannelInboundHandlerAdapter {
        private final Arrivals arrivals;

        Count(Arrivals arrivals) {
            this.arrivals = arrivals;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf buf = (ByteBuf) msg;
            int n = buf.readableBytes();
            buf.release();
            arrivals.add(n);
        }
    }

    /** Raw sessions, the server counting and freeing what arrives; {@value #STREAMS} blocks of 4 KiB to send. */
    @State(Scope.Benchmark)
    public static class RawStreams extends Sessions {
        final Arrivals arrivals = new Arrivals();
        final AtomicInteger toSend = new AtomicInteger();
        final Block[] blocks = new Block[STREAMS];

        @Override
        String label() {
            return "raw streams";
        }

        @Setup(Level.Trial)
        public void open() {
            connect();
            serve(m -> {
                m.close();
                arrivals.add(1);
            });
            for (int i = 0; i < STREAMS; i++) blocks[i] = clientArena.allocate(STREAM_MESSAGE);
        }

        /** Sends {@code block} again once its last send completed, while the burst has messages left. */
        void sendNext(Block block) {
            if (toSend.getAndDecrement() <= 0) return;
            client.sendAsync(block, STREAM_MESSAGE).whenComplete((wc, e) -> {
                if (e == null) sendNext(block);
            });
        }

        @TearDown(Level.Trial)
        public void close() throws InterruptedException {
            for (Block b : blocks) b.close();
            closeSessions();
        }
    }

    @Benchmark
    @OperationsPerInvocation(BURST)
    public void rawStreams(RawStreams raw) {
        long target = raw.arrivals.count() + BURST;
        raw.toSend.set(BURST);
        for (Block b : raw.blocks) raw.sendNext(b);
        raw.arrivals.awaitAtLeast(target);
        raw.operations += BURST;
    }

    /** A Mooring channel to a Netty server that counts and releases what it reads. */
    @State(Scope.Benchmark)
    public static class NettyStreams extends Channels {
        /** Where the writes' buffers come from: the channel's own Mooring allocator, or Netty's pooled one. */
        @Param({"mooring", "nettyPooled"})
        public String buffers;
        ByteBufAllocator allocator;
        int toWrite; // the client loop's
        final ChannelFutureListener writeNext = f -> {
            if (f.isSuccess()) writeNext();
        };

        @Override
        String label() {
            return "netty streams, " + buffers;
        }

        @Setup(Level.Trial)
        public void open() throws InterruptedException {
            connect(new Count(arrivals), new ChannelInboundHandlerAdapter());
            allocator = buffers.equals("mooring") ? client.alloc() : PooledByteBufAllocator.DEFAULT;
        }

        /** Writes the next 4 KiB of a stream (on the loop), while the burst has messages left. */
        void writeNext() {
            if (toWrite-- <= 0) return;
            ByteBuf message = allocator.directBuffer(STREAM_MESSAGE);
            message.setLong(0, 0x2a2a2a2a2a2a2a2aL);
            message.writerIndex(STREAM_MESSAGE);
            client.writeAndFlush(message).addListener(writeNext);
        }
    }

    @Benchmark
    @OperationsPerInvocation(BURST)
    public void nettyStreams(NettyStreams netty) {
        long target = netty.arrivals.count() + (long) BURST * STREAM_MESSAGE;
        netty.client.eventLoop().execute(() -> {
            netty.toWrite = BURST;
            for (int i = 0; i < STREAMS; i++) netty.writeNext();
        });
        netty.arrivals.awaitAtLeast(target);
        netty.operations += BURST;
    }
}
