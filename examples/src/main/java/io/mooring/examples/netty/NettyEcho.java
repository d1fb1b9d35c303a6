package io.mooring.examples.netty;

import io.mooring.allocator.RdmaArena;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.netty.MooringChannel;
import io.mooring.netty.MooringIoHandler;
import io.mooring.netty.MooringServerChannel;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A plain Netty echo — a server that writes back what it reads, a client that times round trips — on RDMA by changing
 * only the event loop group and the channel classes ({@link Transport}): everything else is the code one writes for
 * NIO, {@code ChannelInitializer<SocketChannel>} included. {@code mooring netty-echo} runs it, in one process or two;
 * {@link #main} runs both sides here:
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp ... io.mooring.examples.netty.NettyEcho [ROUND_TRIPS [DEVICE]]
 * </pre>
 */
public final class NettyEcho {
    private NettyEcho() {}

    public static void main(String[] args) throws Exception {
        int roundTrips = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
        String device = args.length > 1 ? args[1] : "soft:soft0";
        try (var server = Transport.mooring(device); var client = Transport.mooring(device)) {
            Server echo = serve(server, 0, 1);
            long[] nanos = ping(client, new InetSocketAddress("127.0.0.1", echo.port()), 64, 1000, roundTrips);
            System.out.println("netty-echo over " + client + ": " + report(nanos, 64));
            System.out.println("server: " + echo.done().get(30, TimeUnit.SECONDS) + " bytes echoed");
        }
    }

    /**
     * What a Netty application chooses to run on a transport: an event loop group and the two channel classes. Over
     * Mooring the group's loops serve an endpoint's sessions; the device, arena and endpoint under it close with it.
     */
    public static final class Transport implements AutoCloseable {
        private final String name;
        private final EventLoopGroup group;
        private final Class<? extends ServerSocketChannel> serverChannel;
        private final Class<? extends SocketChannel> channel;
        private final Runnable under; // closes what the group runs on, after it

        private Transport(String name, EventLoopGroup group, Class<? extends ServerSocketChannel> serverChannel,
                          Class<? extends SocketChannel> channel, Runnable under) {
            this.name = name;
            this.group = group;
            this.serverChannel = serverChannel;
            this.channel = channel;
            this.under = under;
        }

        /** Netty's NIO over TCP sockets. */
        public static Transport nio() {
            return new Transport("NIO (TCP)", new MultiThreadIoEventLoopGroup(NioIoHandler.newFactory()),
                    NioServerSocketChannel.class, NioSocketChannel.class, () -> { });
        }

        /** Mooring sessions on {@code device} ({@code soft:soft0}, {@code ibv:rxe0}...): the switch from NIO. */
        public static Transport mooring(String device) {
            DeviceContext context = RdmaDevices.open(device);
            try {
                ProtectionDomain pd = context.allocateProtectionDomain();
                RdmaArena arena = RdmaArena.builder(pd).build();
                RdmaEndpoint endpoint = RdmaEndpoint.builder(pd, arena).build();
                return new Transport("Mooring (" + device + ")",
                        new MultiThreadIoEventLoopGroup(MooringIoHandler.newFactory(endpoint)),
                        MooringServerChannel.class, MooringChannel.class, () -> {
                            endpoint.close();
                            arena.close();
                            pd.close();
                            context.close();
                        });
            } catch (RuntimeException e) {
                context.close(); // closes what was made under it
                throw e;
            }
        }

        /** Shuts the group down, then what it ran on. */
        @Override
        public void close() {
            try {
                group.shutdownGracefully(0, 5, TimeUnit.SECONDS).awaitUninterruptibly();
            } finally {
                under.run();
            }
        }

        @Override
        public String toString() {
            return name;
        }
    }

    /** A bound echo server: its port, and the bytes it echoed once the clients it serves have gone. */
    public record Server(Channel channel, int port, CompletableFuture<Long> done) {}

    /**
     * Serves an echo on {@code port} (0: any free one) until {@code clients} connections have come and gone, then
     * closes the server channel; {@code done} completes with the bytes echoed.
     */
    public static Server serve(Transport transport, int port, int clients) throws InterruptedException {
        var echoed = new AtomicLong();
        var left = new AtomicInteger(clients);
        var done = new CompletableFuture<Long>();
        Channel server = new ServerBootstrap().group(transport.group).channel(transport.serverChannel)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                echoed.addAndGet(((ByteBuf) msg).readableBytes());
                                ctx.write(msg); // the buffer read goes back out as it is
                            }

                            @Override
                            public void channelReadComplete(ChannelHandlerContext ctx) {
                                ctx.flush();
                            }

                            @Override
                            public void channelInactive(ChannelHandlerContext ctx) {
                                if (left.decrementAndGet() == 0) ctx.channel().parent().close();
                            }
                        });
                    }
                })
                .bind(new InetSocketAddress(port)).sync().channel();
        server.closeFuture().addListener(f -> done.complete(echoed.get()));
        return new Server(server, ((InetSocketAddress) server.localAddress()).getPort(), done);
    }

    /**
     * Connects to an echo server and sends {@code warmup + roundTrips} messages of {@code size} bytes one after the
     * other, each once the echo of the one before has come back whole and checked.
     *
     * @return the measured round trips, in nanoseconds
     * @throws IOException if the echo differs from what was sent, or stops for 30 s
     */
    public static long[] ping(Transport transport, InetSocketAddress server, int size, int warmup, int roundTrips)
            throws IOException, InterruptedException {
        var echo = new Echoes(size);
        Channel channel = new Bootstrap().group(transport.group).channel(transport.channel)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(echo);
                    }
                })
                .connect(server).sync().channel();
        try {
            long[] nanos = new long[roundTrips];
            for (int i = 0; i < warmup + roundTrips; i++) {
                long start = System.nanoTime();
                ByteBuf message = channel.alloc().directBuffer(size); // registered memory over Mooring: no copy
                for (int b = 0; b < size; b++) message.writeByte(Echoes.expected(i, b));
                channel.writeAndFlush(message);
                echo.await(i);
                if (i >= warmup) nanos[i - warmup] = System.nanoTime() - start;
            }
            return nanos;
        } finally {
            channel.close().sync();
        }
    }

    /** The echoed bytes of a client, checked against what round trip {@code i} sent; a permit per whole echo. */
    private static final class Echoes extends ChannelInboundHandlerAdapter {
        private final int size;
        private final Semaphore whole = new Semaphore(0);
        private long received; // the loop's thread
        private volatile String wrong;

        Echoes(int size) {
            this.size = size;
        }

        static byte expected(int roundTrip, int index) {
            return (byte) (roundTrip * 31 + index);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf buf = (ByteBuf) msg;
            try {
                while (buf.isReadable()) {
                    int round = (int) (received / size);
                    int index = (int) (received % size);
                    byte b = buf.readByte();
                    if (b != expected(round, index) && wrong == null) {
                        wrong = "byte " + index + " of round trip " + round + " came back as " + b;
                    }
                    if (++received % size == 0) whole.release();
                }
            } finally {
                buf.release();
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (wrong == null) wrong = "the server closed the connection";
            whole.release();
        }

        void await(int roundTrip) throws IOException, InterruptedException {
            if (!whole.tryAcquire(30, TimeUnit.SECONDS)) {
                throw new IOException("no echo of round trip " + roundTrip + " within 30 s");
            }
            if (wrong != null) throw new IOException("echo: " + wrong);
        }
    }

    /** The round trips' p50, p99 and rate, in one line. */
    public static String report(long[] nanos, int size) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        long total = Arrays.stream(nanos).sum();
        return String.format(Locale.ROOT, "%d round trips of %d bytes: p50 %.1f µs, p99 %.1f µs, %.0f round trips/s",
                sorted.length, size, at(sorted, 0.5), at(sorted, 0.99), sorted.length / (total / 1e9));
    }

    private static double at(long[] sorted, double q) {
        int rank = (int) Math.ceil(q * sorted.length);
        return sorted[Math.max(rank, 1) - 1] / 1e3;
    }
}
