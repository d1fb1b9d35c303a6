package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.Access;
import io.mooring.verbs.Bootstrap;
import io.mooring.verbs.ConnectOptions;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.Gid;
import io.mooring.verbs.Mtu;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.QpInfo;
import io.mooring.verbs.RdmaDevices;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A session that never comes about costs nothing that stays: peers that break the bootstrap off, send garbage, speak
 * another protocol version or say nothing at all make {@link RdmaSession#accept} throw — the silent one within the
 * request timeout — with no block, verbs object, thread or file descriptor left behind, however often they try.
 */
@Timeout(120)
class SessionSetupTest {
    private static final int ROUNDS = 25;

    private final ResourceGraph graph = ResourceGraph.builder().name("session-setup").build();
    private final DeviceContext context = RdmaDevices.open("soft:soft0", graph);
    private final ProtectionDomain pd = context.allocateProtectionDomain();
    private final RdmaArena arena = RdmaArena.builder(pd).chunkSize(1 << 20).shards(1)
            .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
    private final SessionConfig config = new SessionConfig(pd, arena, LeaseLimits.DEFAULT, Isolation.WINDOW,
            Duration.ofMillis(300), ConnectOptions.DEFAULT);

    @AfterEach
    void teardown() {
        arena.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
    }

    /** What a misbehaving peer does with its connection to the accepting side. */
    private interface Peer {
        void misbehave(Socket socket) throws IOException;
    }

    @Test
    void failedAndAbandonedBootstrapsLeaveNothingBehind() throws Exception {
        Peer hangUp = Socket::close;
        Peer garbage = s -> s.getOutputStream().write("GET / HTTP/1.1\r\n\r\n".getBytes());
        Peer silent = s -> { }; // says nothing and keeps the connection open
        Peer otherVersion = s -> {
            var fake = new QpInfo(7, 1, Gid.of(InetAddress.getLoopbackAddress()), 1, Mtu.MTU_1024, 1);
            Bootstrap.of(s).exchange(fake, ByteBuffer.allocate(4).putInt(0, 99));
        };
        try (var server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            refuse(server, hangUp); // warms up what a first session makes once (classes, the soft fabric's listener)
            long liveResources = graph.liveCount();
            long fds = openFds();
            int threads = Thread.activeCount();
            for (int i = 0; i < ROUNDS; i++) {
                for (Peer peer : new Peer[] {hangUp, garbage, otherVersion}) refuse(server, peer);
            }
            long start = System.nanoTime();
            var timeout = refuse(server, silent);
            assertTrue(timeout instanceof SocketTimeoutException, () -> "a silent peer: " + timeout);
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(30), "dropped within the request timeout");

            assertEquals(0, arena.stats().liveBlocks(), "control buffers of failed sessions");
            assertEquals(liveResources, graph.liveCount(), graph::dump);
            assertTrue(Thread.activeCount() <= threads + 2, () -> "threads: " + threads + " then "
                    + Thread.activeCount());
            assertTrue(openFds() <= fds + 2, "file descriptors of failed sessions");
        }
    }

    @Test
    void anArenaWithoutTheRightsALeaseNeedsIsRefusedWhenTheSessionIsConfigured() {
        try (RdmaArena noBind = RdmaArena.builder(pd).chunkSize(1 << 20).shards(1)
                .access(EnumSet.of(Access.LOCAL_WRITE)).build();
             RdmaArena noWrite = RdmaArena.builder(pd).chunkSize(1 << 20).shards(1)
                     .access(EnumSet.of(Access.MW_BIND)).build()) {
            var e = assertThrows(IllegalArgumentException.class, () -> SessionConfig.of(pd, noBind));
            assertTrue(e.getMessage().contains("needs MW_BIND to lease blocks through memory windows"), e.getMessage());
            // A dedicated registration per lease binds no window: the same arena serves then.
            assertEquals(Isolation.DEDICATED_REGISTRATION, new SessionConfig(pd, noBind, LeaseLimits.DEFAULT,
                    Isolation.DEDICATED_REGISTRATION, Duration.ofSeconds(10), ConnectOptions.DEFAULT).isolation());
            e = assertThrows(IllegalArgumentException.class, () -> SessionConfig.of(pd, noWrite));
            assertTrue(e.getMessage().contains("needs LOCAL_WRITE"), e.getMessage());
        }
    }

    /** Lets {@code peer} connect and misbehave; returns what {@link RdmaSession#accept} threw. */
    private IOException refuse(ServerSocket server, Peer peer) throws Exception {
        var accepted = CompletableFuture.supplyAsync(() -> assertThrows(IOException.class,
                () -> RdmaSession.accept(server, config).close()));
        try (var socket = new Socket(server.getInetAddress(), server.getLocalPort())) {
            peer.misbehave(socket);
            return accepted.get(60, TimeUnit.SECONDS);
        }
    }

    private static long openFds() throws IOException {
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }
}
