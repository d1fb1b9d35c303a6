package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Attributes;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.MethodDescriptor.MethodType;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServerTransportFilter;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.mooring.testing.ThreadDump;
import io.netty.channel.ChannelOption;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * gRPC-java — an application no one here wrote — over the Mooring transport: its own {@code grpc-netty} (HTTP/2 on
 * Netty, unshaded) given the Mooring channel classes and event loop groups through its public builders, on soft
 * devices. Unary calls from many virtual threads at once, the three streaming kinds, a message far larger than one
 * RDMA message, a deadline that passes, a server that goes away or is not there, connections the server ages out; and,
 * after every test, the server, the channel and the groups shut down with every session closed, every block back in
 * its arena and no Mooring thread left.
 *
 * <p>No generated stubs: the service is defined by hand with gRPC's {@link MethodDescriptor}s over raw bytes.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class GrpcOverMooringTest {
    private static final String SERVICE = "mooring.test.Bytes";
    private static final MethodDescriptor<byte[], byte[]> REVERSE = method(MethodType.UNARY, "Reverse");
    private static final MethodDescriptor<byte[], byte[]> COUNT = method(MethodType.SERVER_STREAMING, "Count");
    private static final MethodDescriptor<byte[], byte[]> CONCAT = method(MethodType.CLIENT_STREAMING, "Concat");
    private static final MethodDescriptor<byte[], byte[]> REVERSE_EACH =
            method(MethodType.BIDI_STREAMING, "ReverseEach");
    /** Answers nothing, ever; a streaming call, so that the server starts it before any message comes. */
    private static final MethodDescriptor<byte[], byte[]> NEVER = method(MethodType.BIDI_STREAMING, "Never");

    /** Threads there before the test: the fixture's devices start some (dispatchers), and JVM-wide ones may be up. */
    private final Set<String> threadsBefore = mooringThreads();
    private final TransportFixture f = new TransportFixture();
    private final ExecutorService calls = Executors.newVirtualThreadPerTaskExecutor(); // gRPC's callbacks run here
    /** Complete when the server got a {@link #NEVER} call, and when it saw it cancelled. */
    private final CompletableFuture<Void> neverStarted = new CompletableFuture<>();
    private final CompletableFuture<Void> neverCancelled = new CompletableFuture<>();
    private Server server;
    private ManagedChannel channel;

    @BeforeEach
    void start() throws IOException {
        serve(server -> server, client -> client);
    }

    /** A server over the Mooring transport with {@code serverOptions}, a channel to it with {@code clientOptions}. */
    private void serve(UnaryOperator<NettyServerBuilder> serverOptions,
            UnaryOperator<NettyChannelBuilder> clientOptions) throws IOException {
        server = serverOptions.apply(NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0))
                .channelType(MooringServerChannel.class)
                .bossEventLoopGroup(f.server.group).workerEventLoopGroup(f.server.group)
                .executor(calls).addService(service())).build().start();
        channel = clientOptions.apply(NettyChannelBuilder.forAddress(server.getListenSockets().getFirst())
                .channelType(MooringChannel.class).eventLoopGroup(f.client.group)
                .executor(calls).usePlaintext()).build();
    }

    /** Shuts the default server and channel down, then serves with other options. */
    private void serveInstead(UnaryOperator<NettyServerBuilder> serverOptions,
            UnaryOperator<NettyChannelBuilder> clientOptions) throws Exception {
        channel.shutdownNow();
        server.shutdownNow();
        assertTrue(channel.awaitTermination(20, TimeUnit.SECONDS) && server.awaitTermination(20, TimeUnit.SECONDS));
        serve(serverOptions, clientOptions);
    }

    @AfterEach
    void shutDown() throws Exception {
        try {
            if (channel != null) channel.shutdown();
            if (server != null) server.shutdown();
            if (channel != null) assertTrue(channel.awaitTermination(20, TimeUnit.SECONDS), "the channel still runs");
            if (server != null) assertTrue(server.awaitTermination(20, TimeUnit.SECONDS), "the server still runs");
            calls.close();
        } finally {
            f.close(); // the groups shut down, every session closed, every block back in its arena, the graph empty
        }
        awaitNoMooringThreadsBut(threadsBefore);
    }

    @Test
    void unaryCallsFromManyVirtualThreadsEachGetTheirOwnReply() throws Exception {
        List<Future<?>> callers = new ArrayList<>();
        try (var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int t = 0; t < 32; t++) {
                int thread = t;
                callers.add(threads.submit(() -> {
                    var random = new Random(thread);
                    for (int i = 0; i < 50; i++) {
                        byte[] request = new byte[1 + random.nextInt(1 << random.nextInt(17))]; // up to 64 KiB
                        random.nextBytes(request);
                        assertArrayEquals(reversed(request), unary(REVERSE, request), "call " + i + " of " + thread);
                    }
                    return null;
                }));
            }
            for (Future<?> caller : callers) ThreadDump.awaitOrDump(caller, Duration.ofSeconds(90), "callers");
        }
        // all of it over one HTTP/2 connection: one Mooring session, not a socket
        assertEquals(1, f.client.endpoint.sessions().size(), () -> "client sessions: " + f.client.endpoint.sessions());
        assertEquals(1, f.server.endpoint.sessions().size(), () -> "server sessions: " + f.server.endpoint.sessions());
    }

    @Test
    void aServerStreamDeliversEveryReplyInOrder() {
        Iterator<byte[]> replies = ClientCalls.blockingServerStreamingCall(channel, COUNT, CallOptions.DEFAULT,
                utf8("1000"));
        for (int i = 0; i < 1000; i++) {
            assertTrue(replies.hasNext(), "the stream ended after " + i + " replies");
            assertEquals("reply " + i, text(replies.next()));
        }
        assertTrue(!replies.hasNext(), "more replies than asked for");
    }

    @Test
    void aClientStreamIsReceivedWhole() throws Exception {
        var reply = new Replies();
        StreamObserver<byte[]> requests = ClientCalls.asyncClientStreamingCall(channel.newCall(CONCAT,
                CallOptions.DEFAULT), reply);
        var sent = new ByteArrayOutputStream();
        var random = new Random(7);
        for (int i = 0; i < 500; i++) {
            byte[] chunk = new byte[random.nextInt(2000)];
            random.nextBytes(chunk);
            sent.write(chunk);
            requests.onNext(chunk);
        }
        requests.onCompleted();
        List<byte[]> replies = reply.done.get(60, TimeUnit.SECONDS);
        assertEquals(1, replies.size());
        assertArrayEquals(sent.toByteArray(), replies.getFirst());
    }

    @Test
    void aBidiStreamAnswersEachRequestInOrder() throws Exception {
        var replies = new Replies();
        StreamObserver<byte[]> requests = ClientCalls.asyncBidiStreamingCall(channel.newCall(REVERSE_EACH,
                CallOptions.DEFAULT), replies);
        for (int i = 0; i < 1000; i++) requests.onNext(utf8("request " + i));
        requests.onCompleted();
        List<byte[]> got = replies.done.get(60, TimeUnit.SECONDS);
        assertEquals(1000, got.size());
        for (int i = 0; i < got.size(); i++) assertArrayEquals(reversed(utf8("request " + i)), got.get(i));
    }

    @Test
    void aMebibyteMessageCrossesIntactBothWays() {
        byte[] request = new byte[1 << 20]; // many RDMA messages, many HTTP/2 frames, past the flow-control windows
        new Random(3).nextBytes(request);
        assertArrayEquals(reversed(request), unary(REVERSE, request));
    }

    @Test
    void aCallPastItsDeadlineFailsAndTheServerSeesItCancelled() throws Exception {
        assertArrayEquals(utf8("ok"), unary(REVERSE, utf8("ko"))); // connected: the deadline is all the call waits for
        var replies = new Replies();
        ClientCalls.asyncBidiStreamingCall(channel.newCall(NEVER, CallOptions.DEFAULT.withDeadlineAfter(1,
                TimeUnit.SECONDS)), replies);
        neverStarted.get(30, TimeUnit.SECONDS);
        var e = assertThrows(ExecutionException.class, () -> replies.done.get(30, TimeUnit.SECONDS));
        assertEquals(Status.Code.DEADLINE_EXCEEDED, Status.fromThrowable(e.getCause()).getCode(), e::toString);
        neverCancelled.get(30, TimeUnit.SECONDS); // by the client's RST_STREAM or the server's own deadline
        assertArrayEquals(utf8("ok"), unary(REVERSE, utf8("ko"))); // and the connection serves on
    }

    @Test
    void theServerGoingAwayFailsTheCallInFlight() throws Exception {
        var reply = new Replies();
        ClientCalls.asyncBidiStreamingCall(channel.newCall(NEVER, CallOptions.DEFAULT), reply);
        neverStarted.get(30, TimeUnit.SECONDS);
        server.shutdownNow(); // its connections close: the client's session ends under the call
        var e = assertThrows(ExecutionException.class, () -> reply.done.get(30, TimeUnit.SECONDS));
        assertEquals(Status.Code.UNAVAILABLE, Status.fromThrowable(e.getCause()).getCode(), e::toString);
        neverCancelled.get(30, TimeUnit.SECONDS);
    }

    @Test
    void connectionsTheServerAgesOutAreReplacedWithoutAFailedCall() throws Exception {
        var connections = new AtomicInteger();
        serveInstead(server -> server.maxConnectionAge(1, TimeUnit.SECONDS) // gRPC's least; then GOAWAY, a new one
                .maxConnectionAgeGrace(30, TimeUnit.SECONDS).addTransportFilter(new ServerTransportFilter() {
                    @Override
                    public Attributes transportReady(Attributes transport) {
                        connections.incrementAndGet();
                        return transport;
                    }
                }), client -> client);
        for (int i = 0; connections.get() < 3; i++) { // about 3 s
            byte[] request = utf8("call " + i);
            assertArrayEquals(reversed(request), unary(REVERSE, request));
        }
        assertTrue(f.client.endpoint.sessions().size() <= 2, () -> "sessions: " + f.client.endpoint.sessions());
    }

    @Test
    void gRpcsOwnBuffersFromTheMooringAllocatorGoOutAsWell() throws Exception {
        // Registered memory for what gRPC writes too (it sets its own allocator; an option set later wins).
        serveInstead(
                server -> server.withChildOption(ChannelOption.ALLOCATOR, new MooringByteBufAllocator(f.server.arena)),
                client -> client.withOption(ChannelOption.ALLOCATOR, new MooringByteBufAllocator(f.client.arena)));
        var random = new Random(5);
        for (int size : new int[] {1, 100, 4096, 4097, 65_536, 1 << 20}) {
            byte[] request = new byte[size];
            random.nextBytes(request);
            assertArrayEquals(reversed(request), unary(REVERSE, request), size + " bytes");
        }
    }

    @Test
    void aCallToAnAddressNobodyListensOnFailsUnavailable() throws Exception {
        int port;
        try (var probe = new ServerSocket(0)) {
            port = probe.getLocalPort(); // free once closed
        }
        ManagedChannel nowhere = NettyChannelBuilder.forAddress(new InetSocketAddress("127.0.0.1", port))
                .channelType(MooringChannel.class).eventLoopGroup(f.client.group).usePlaintext().build();
        try {
            var e = assertThrows(StatusRuntimeException.class, () -> ClientCalls.blockingUnaryCall(nowhere, REVERSE,
                    CallOptions.DEFAULT.withDeadlineAfter(30, TimeUnit.SECONDS), utf8("hello")));
            assertEquals(Status.Code.UNAVAILABLE, e.getStatus().getCode(), e::toString);
            assertInstanceOf(ConnectException.class, e.getCause(), e::toString);
        } finally {
            nowhere.shutdownNow();
            assertTrue(nowhere.awaitTermination(20, TimeUnit.SECONDS));
        }
    }

    // ---- the service --------------------------------------------------------------------------------------------

    private ServerServiceDefinition service() {
        return ServerServiceDefinition.builder(SERVICE)
                .addMethod(REVERSE, ServerCalls.asyncUnaryCall((request, reply) -> {
                    reply.onNext(reversed(request));
                    reply.onCompleted();
                }))
                .addMethod(COUNT, ServerCalls.asyncServerStreamingCall((request, replies) -> {
                    int n = Integer.parseInt(text(request));
                    for (int i = 0; i < n; i++) replies.onNext(utf8("reply " + i));
                    replies.onCompleted();
                }))
                .addMethod(CONCAT, ServerCalls.asyncClientStreamingCall(reply -> new Collector() {
                    private final ByteArrayOutputStream all = new ByteArrayOutputStream();

                    @Override
                    public void onNext(byte[] chunk) {
                        all.writeBytes(chunk);
                    }

                    @Override
                    public void onCompleted() {
                        reply.onNext(all.toByteArray());
                        reply.onCompleted();
                    }
                }))
                .addMethod(REVERSE_EACH, ServerCalls.asyncBidiStreamingCall(replies -> new Collector() {
                    @Override
                    public void onNext(byte[] request) {
                        replies.onNext(reversed(request));
                    }

                    @Override
                    public void onCompleted() {
                        replies.onCompleted();
                    }
                }))
                .addMethod(NEVER, ServerCalls.asyncBidiStreamingCall(replies -> {
                    var observer = (ServerCallStreamObserver<byte[]>) replies;
                    observer.setOnCancelHandler(() -> neverCancelled.complete(null));
                    neverStarted.complete(null);
                    return new Collector() {
                        @Override
                        public void onNext(byte[] request) {
                        }

                        @Override
                        public void onCompleted() {
                        }
                    };
                }))
                .build();
    }

    /** A request stream's observer on the server; a failed stream (a cancelled call) needs nothing done. */
    private abstract static class Collector implements StreamObserver<byte[]> {
        @Override
        public void onError(Throwable t) {
        }
    }

    /** What a call's replies were, once it completed. */
    private static final class Replies implements StreamObserver<byte[]> {
        private final List<byte[]> got = new ArrayList<>();
        final CompletableFuture<List<byte[]>> done = new CompletableFuture<>();

        @Override
        public synchronized void onNext(byte[] reply) {
            got.add(reply);
        }

        @Override
        public synchronized void onCompleted() {
            done.complete(List.copyOf(got));
        }

        @Override
        public void onError(Throwable t) {
            done.completeExceptionally(t);
        }
    }

    private byte[] unary(MethodDescriptor<byte[], byte[]> method, byte[] request) {
        return ClientCalls.blockingUnaryCall(channel, method,
                CallOptions.DEFAULT.withDeadlineAfter(60, TimeUnit.SECONDS), request);
    }

    private static MethodDescriptor<byte[], byte[]> method(MethodType type, String name) {
        return MethodDescriptor.<byte[], byte[]>newBuilder().setType(type)
                .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
                .setRequestMarshaller(RawBytes.MARSHALLER).setResponseMarshaller(RawBytes.MARSHALLER).build();
    }

    /** A message is its bytes: what a generated protobuf marshaller would be, without protoc. */
    private enum RawBytes implements MethodDescriptor.Marshaller<byte[]> {
        MARSHALLER;

        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw Status.INTERNAL.withDescription("reading a message failed").withCause(e).asRuntimeException();
            }
        }
    }

    private static byte[] reversed(byte[] bytes) {
        byte[] r = new byte[bytes.length];
        for (int i = 0; i < bytes.length; i++) r[i] = bytes[bytes.length - 1 - i];
        return r;
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static String text(byte[] bytes) {
        return new String(bytes, StandardCharsets.UTF_8);
    }

    // ---- threads left behind ------------------------------------------------------------------------------------

    /** A thread's name and id in a thread dump (virtual threads included): {@code #42 "name" ...}. */
    private static final Pattern DUMPED = Pattern.compile("^#(\\d+) \"(mooring-[^\"]*)\"", Pattern.MULTILINE);
    /** Started once per JVM at first use, and kept: not the test's to stop. */
    private static final List<String> JVM_WIDE = List.of("mooring-housekeeper", "mooring-lease-timer",
            "mooring-handshake-watchdog");

    /** The Mooring threads alive now, platform and virtual, as {@code name#id}. */
    private static Set<String> mooringThreads() {
        Set<String> threads = new TreeSet<>();
        Matcher m = DUMPED.matcher(ThreadDump.all());
        while (m.find()) threads.add(m.group(2) + "#" + m.group(1));
        return threads;
    }

    /** Polls (bounded, 20 s) until no Mooring thread is alive beyond {@code before} and the JVM-wide ones. */
    private static void awaitNoMooringThreadsBut(Set<String> before) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            Set<String> extra = mooringThreads();
            extra.removeAll(before);
            extra.removeIf(t -> JVM_WIDE.stream().anyMatch(name -> t.startsWith(name + "#")));
            if (extra.isEmpty()) return;
            if (System.nanoTime() > deadline) throw new AssertionError("Mooring threads left: " + extra);
            Thread.sleep(50);
        }
    }
}
