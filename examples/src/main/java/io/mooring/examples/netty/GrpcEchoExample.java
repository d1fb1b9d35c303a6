package io.mooring.examples.netty;

import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.netty.MooringChannel;
import io.mooring.netty.MooringIoHandler;
import io.mooring.netty.MooringServerChannel;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.concurrent.TimeUnit;

/**
 * gRPC-java over RDMA, unchanged: a unary echo service served and called through grpc-netty's own builders, given the
 * Mooring transport's event loop group and channel classes instead of Netty's NIO — the only difference. It then times
 * the same call over both in one run (one caller, 64 characters, rounds alternating between the two) and prints the
 * p50 and p99 of each:
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp ... io.mooring.examples.netty.GrpcEchoExample [CALLS [DEVICE]]
 * </pre>
 * CALLS defaults to 20000, DEVICE to {@code soft:soft0} ({@code ibv:rxe0} on Soft-RoCE). No generated code: the method
 * is described by hand over UTF-8 strings. On the soft provider a Mooring session is an emulation over TCP, so the
 * figure says what the emulation costs gRPC, not what a NIC gives.
 */
public final class GrpcEchoExample {
    private static final MethodDescriptor<String, String> ECHO = MethodDescriptor.<String, String>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY)
            .setFullMethodName(MethodDescriptor.generateFullMethodName("mooring.example.Echo", "Echo"))
            .setRequestMarshaller(Utf8.MARSHALLER).setResponseMarshaller(Utf8.MARSHALLER).build();
    private static final int ROUNDS = 10;

    public static void main(String[] args) throws Exception {
        int calls = args.length > 0 ? Integer.parseInt(args[0]) : 20_000;
        String deviceName = args.length > 1 ? args[1] : "soft:soft0";
        long liveBlocks;
        try (DeviceContext device = RdmaDevices.open(deviceName);
             ProtectionDomain pd = device.allocateProtectionDomain();
             RdmaArena arena = RdmaArena.builder(pd).access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build()) {
            try (RdmaEndpoint endpoint = RdmaEndpoint.builder(pd, arena).build()) {
                run(endpoint, deviceName, calls);
            }
            liveBlocks = arena.stats().liveBlocks();
        }
        System.out.println("done: " + liveBlocks + " live blocks, " + RdmaDevices.graph().liveCount()
                + " live resources");
    }

    /** Serves and calls the echo over the endpoint's sessions and over NIO, and prints the figures. */
    private static void run(RdmaEndpoint endpoint, String deviceName, int calls) throws Exception {
        // Server and client share one endpoint and one group here; in two processes each has its own.
        EventLoopGroup mooring = new MultiThreadIoEventLoopGroup(MooringIoHandler.newFactory(endpoint));
        EventLoopGroup nio = new MultiThreadIoEventLoopGroup(NioIoHandler.newFactory());
        try (var overMooring = new Echo(mooring, MooringServerChannel.class, MooringChannel.class);
             var overNio = new Echo(nio, NioServerSocketChannel.class, NioSocketChannel.class)) {
            System.out.println("echoed over Mooring: " + overMooring.call("hello over RDMA"));
            String message = "m".repeat(64);
            int perRound = Math.max(1, calls / ROUNDS);
            long[] mooringNanos = new long[ROUNDS * perRound];
            long[] nioNanos = new long[ROUNDS * perRound];
            overMooring.time(message, mooringNanos, 0, perRound); // warm-up, overwritten below
            overNio.time(message, nioNanos, 0, perRound);
            for (int at = 0; at < mooringNanos.length; at += perRound) { // alternating: both see the same machine
                overMooring.time(message, mooringNanos, at, perRound);
                overNio.time(message, nioNanos, at, perRound);
            }
            System.out.printf("gRPC unary, %d calls each: Mooring (%s) p50 %.1f us, p99 %.1f us; NIO (loopback)"
                            + " p50 %.1f us, p99 %.1f us; p50 ratio %.2f%n", mooringNanos.length, deviceName,
                    micros(mooringNanos, 0.5), micros(mooringNanos, 0.99), micros(nioNanos, 0.5),
                    micros(nioNanos, 0.99), micros(mooringNanos, 0.5) / micros(nioNanos, 0.5));
        } finally {
            mooring.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync(); // before the endpoint closes
            nio.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
        }
    }

    /** An echo server and a channel to it on one Netty transport: a group, a server channel and a channel class. */
    private static final class Echo implements AutoCloseable {
        private final Server server;
        private final ManagedChannel channel;

        Echo(EventLoopGroup group, Class<? extends ServerChannel> serverChannel, Class<? extends Channel> channelType)
                throws IOException {
            ServerServiceDefinition service = ServerServiceDefinition.builder("mooring.example.Echo")
                    .addMethod(ECHO, ServerCalls.asyncUnaryCall((request, reply) -> {
                        reply.onNext(request);
                        reply.onCompleted();
                    }))
                    .build();
            server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                    .channelType(serverChannel).bossEventLoopGroup(group).workerEventLoopGroup(group)
                    .directExecutor().addService(service).build().start();
            channel = NettyChannelBuilder.forAddress(server.getListenSockets().getFirst())
                    .channelType(channelType).eventLoopGroup(group).directExecutor().usePlaintext().build();
        }

        String call(String request) {
            return ClientCalls.blockingUnaryCall(channel, ECHO, CallOptions.DEFAULT.withDeadlineAfter(30,
                    TimeUnit.SECONDS), request);
        }

        /** Times {@code n} calls one after the other into {@code nanos[at...]}. */
        void time(String request, long[] nanos, int at, int n) {
            for (int i = 0; i < n; i++) {
                long start = System.nanoTime();
                String reply = call(request);
                nanos[at + i] = System.nanoTime() - start;
                if (!reply.equals(request)) throw new IllegalStateException("echoed " + reply + " for " + request);
            }
        }

        @Override
        public void close() {
            channel.shutdown();
            server.shutdown();
            try {
                channel.awaitTermination(10, TimeUnit.SECONDS);
                server.awaitTermination(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt(); // the groups' shutdown closes what is left
            }
        }
    }

    /** The {@code q} quantile of {@code nanos}, in microseconds. */
    private static double micros(long[] nanos, double q) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        return sorted[(int) Math.min(sorted.length - 1, Math.round(q * (sorted.length - 1)))] / 1000.0;
    }

    /** A message is a UTF-8 string: what a generated protobuf marshaller would be, without protoc. */
    private enum Utf8 implements MethodDescriptor.Marshaller<String> {
        MARSHALLER;

        @Override
        public InputStream stream(String value) {
            return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String parse(InputStream stream) {
            try {
                return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    private GrpcEchoExample() {}
}
