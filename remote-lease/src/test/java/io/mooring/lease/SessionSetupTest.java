package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.MooringException;
import io.mooring.lifecycle.MooringTimeoutException;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.CapturedLog;
import io.mooring.verbs.Bootstrap;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.QpInfo;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.Gid;
import io.mooring.verbs.values.Mtu;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A session that never comes about costs nothing that stays: peers that break the bootstrap off, send garbage, speak
 * another protocol version or say nothing at all are refused by the listener — the silent one within the handshake
 * timeout — with no block, verbs object, thread or file descriptor left behind, however often they try, and while
 * they hang an honest peer is served.
 */
@Timeout(120)
class SessionSetupTest {
    /** The sessions' INFO lines (peers closing, refusals) are expected; kept out of the build output. */
    @RegisterExtension
    final CapturedLog log = new CapturedLog("io.mooring.lease");

    private static final int ROUNDS = 25;

    private final ResourceGraph graph = ResourceGraph.builder().name("session-setup").build();
    private final DeviceContext context = RdmaDevices.open("soft:soft0", graph);
    private final ProtectionDomain pd = context.allocateProtectionDomain();
    private final RdmaArena arena = RdmaArena.builder(pd).chunkSize(1 << 20).shards(1)
            .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
    private final RdmaEndpoint endpoint = RdmaEndpoint.builder(pd, arena).isolation(Isolation.WINDOW)
            .handshakeTimeout(Duration.ofMillis(300)).build();

    @AfterEach
    void teardown() {
        endpoint.close();
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
            int record = 4 + QpInfo.BYTES + 16; // a session's bootstrap record, with version 99
            Greeting.sayHello(s);
            Greeting.awaitVerdict(s);
            Bootstrap.of(s).exchange(fake, ByteBuffer.allocate(record).putInt(0, 99), record);
        };
        Peer leavesAtTheBarrier = s -> { // passes the bootstrap, then hangs up: every part of the session was made
            var fake = new QpInfo(7, 1, Gid.of(InetAddress.getLoopbackAddress()), 1, Mtu.MTU_1024, 1);
            int record = 4 + QpInfo.BYTES + 16;
            Greeting.sayHello(s);
            Greeting.awaitVerdict(s);
            var data = ByteBuffer.allocate(record).putInt(MessageCodec.VERSION);
            fake.writeTo(data);
            Bootstrap.of(s).exchange(fake, data.putInt(16).putInt(4096).putInt(1).putInt(1).flip(), record);
            s.close();
        };
        try (var listener = endpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            refuse(listener, hangUp); // warms up what a first session makes once (classes, the soft fabric's listener)
            refuse(listener, leavesAtTheBarrier); // and the endpoint's shared receives, kept for the next sessions
            long blocks = arena.stats().liveBlocks();
            long liveResources = graph.liveCount();
            long fds = openFds();
            int threads = Thread.activeCount();
            for (int i = 0; i < ROUNDS; i++) {
                for (Peer peer : new Peer[] {hangUp, garbage, otherVersion, leavesAtTheBarrier}) refuse(listener, peer);
            }
            long start = System.nanoTime();
            refuse(listener, silent);
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(30), "dropped within the handshake timeout");

            assertEquals(blocks, arena.stats().liveBlocks(), "control buffers of failed sessions");
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
            var e = assertThrows(IllegalArgumentException.class,
                    () -> RdmaEndpoint.builder(pd, noBind).isolation(Isolation.WINDOW).build());
            assertTrue(e.getMessage().contains("needs MW_BIND to lease blocks through memory windows"), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> RdmaEndpoint.builder(pd, noWrite).build());
            assertTrue(e.getMessage().contains("needs LOCAL_WRITE"), e.getMessage());
        }
    }

    /**
     * A client that only sends and reads what it is offered needs no MW_BIND on its arena: its endpoint leases, if
     * ever asked, through registrations of their own, and everything a session does works both ways.
     */
    @Test
    void aClientArenaWithoutMwBindServesEverySessionFeature() throws Exception {
        try (RdmaArena plain = RdmaArena.builder(pd).chunkSize(1 << 20).shards(1)
                .access(EnumSet.of(Access.LOCAL_WRITE)).build();
             var client = RdmaEndpoint.builder(pd, plain).build();
             var listener = endpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            assertEquals(Isolation.DEDICATED_REGISTRATION, client.isolation());
            var accepted = listener.acceptAsync();
            try (RdmaSession toServer = client.connectAsync(listener.address()).get(30, TimeUnit.SECONDS);
                 RdmaSession toClient = accepted.get(30, TimeUnit.SECONDS);
                 var value = arena.allocateShared(64, 8); var dst = plain.allocate(64)) {
                value.segment().fill((byte) 5);
                toClient.offer(value, Duration.ofSeconds(30), EnumSet.of(Access.REMOTE_READ));
                try (RemoteSegment offered = toServer.receiveOffer(Duration.ofSeconds(10))) {
                    offered.read(dst, 0);
                    assertEquals(5, dst.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 63));
                }
                try (RemoteSegment fromClient = toClient.requestRemote(64, Duration.ofSeconds(30),
                        EnumSet.of(Access.REMOTE_WRITE))) {
                    fromClient.write(value, 0); // into the client's memory, through a registration of its own
                }
            }
        }
    }

    /** Silent connections hang in their handshakes on their own threads: an honest peer is served meanwhile. */
    @Test
    void silentPeersDoNotStallAnHonestOne() throws Exception {
        try (var patient = RdmaEndpoint.builder(pd, arena).isolation(Isolation.WINDOW)
                     .handshakeTimeout(Duration.ofSeconds(20)).build();
             var listener = patient.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             var requester = RdmaEndpoint.builder(pd, arena).isolation(Isolation.WINDOW).build()) {
            var silent = new java.util.ArrayList<Socket>();
            try {
                for (int i = 0; i < 8; i++) silent.add(new Socket(listener.address().getAddress(), listener.address().getPort()));
                var accepted = listener.acceptAsync();
                try (RdmaSession s = requester.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
                     RdmaSession o = accepted.get(10, TimeUnit.SECONDS)) {
                    assertEquals(null, o.lostReason());
                    assertEquals(null, s.lostReason());
                }
            } finally {
                for (Socket s : silent) s.close();
            }
        }
    }

    /**
     * An application that polls {@code accept()} with a timed {@code get} (to check a stop flag between polls) gets
     * the next session from its next poll — not a timeout while the session went to an earlier, abandoned poll — and
     * may poll as often as it likes.
     */
    @Test
    void pollingAcceptWithATimeoutLosesNoSession() throws Exception {
        try (var listener = endpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             var requester = RdmaEndpoint.builder(pd, arena).isolation(Isolation.WINDOW).build()) {
            for (int i = 0; i < 2 * RdmaListener.BACKLOG; i++) {
                assertThrows(java.util.concurrent.TimeoutException.class,
                        () -> listener.acceptAsync().get(1, TimeUnit.MILLISECONDS));
            }
            try (RdmaSession s = requester.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
                 RdmaSession o = listener.acceptAsync().get(10, TimeUnit.SECONDS)) {
                assertEquals(null, o.lostReason());
                assertEquals(null, s.lostReason());
            }
        }
    }

    /**
     * One address holds at most {@code maxSessionsPerPeer} sessions: the next is refused at its handshake, and once one
     * closes its place is free. Without the cap one address could take every slot of the endpoint.
     */
    @Test
    void aPeerPastItsSessionCapIsRefusedUntilOneOfItsSessionsCloses() throws Exception {
        try (var capped = RdmaEndpoint.builder(pd, arena).isolation(Isolation.WINDOW).maxSessionsPerPeer(2).build();
             var listener = capped.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             var requester = RdmaEndpoint.builder(pd, arena).isolation(Isolation.WINDOW).build()) {
            RdmaSession first = requester.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
            try (RdmaSession second = requester.connectAsync(listener.address()).get(10, TimeUnit.SECONDS)) {
                assertThrows(java.util.concurrent.ExecutionException.class,
                        () -> requester.connectAsync(listener.address()).get(10, TimeUnit.SECONDS));
                assertTrue(Await.polling(() -> listener.refused() == 1, Duration.ofSeconds(10)),
                        "the third session, refused at its handshake");
                first.close();
                assertTrue(Await.polling(() -> capped.sessions().size() == 1, Duration.ofSeconds(10)), "first ended");
                try (RdmaSession third = requester.connectAsync(listener.address()).get(10, TimeUnit.SECONDS)) {
                    assertEquals(null, third.lostReason());
                    assertEquals(null, second.lostReason());
                }
            }
        }
    }

    /**
     * A connect that fails says why with a type a caller can branch on, each a {@code MooringException}: nobody
     * listening and a peer that is no Mooring endpoint are {@link ConnectFailedException}s carrying the I/O error, a
     * peer that says nothing is a timeout after the handshake timeout; none is a refusal, which needs the peer's word.
     */
    @Test
    void aFailedConnectIsTypedByWhatWentWrong() throws Exception {
        int nobody;
        try (var probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            nobody = probe.getLocalPort(); // free once closed: nobody listens there
        }
        var unreachable = connectFailure(new InetSocketAddress(InetAddress.getLoopbackAddress(), nobody));
        assertEquals(ConnectFailedException.class, unreachable.getClass(), unreachable::toString);
        assertInstanceOf(ConnectException.class, unreachable.getCause());

        try (var stranger = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            Thread.ofVirtual().start(() -> { // reads the HELLO and hangs up, as a server of another protocol may
                try (Socket s = stranger.accept()) {
                    s.getInputStream().readNBytes(Greeting.HELLO_BYTES);
                } catch (IOException e) {
                    // the test fails on the connect's side
                }
            });
            var hungUp = connectFailure((InetSocketAddress) stranger.getLocalSocketAddress());
            assertEquals(ConnectFailedException.class, hungUp.getClass(), hungUp::toString);
            assertInstanceOf(EOFException.class, hungUp.getCause());
        }

        try (var silent = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) { // accepted by the kernel, mute
            long start = System.nanoTime();
            var timedOut = connectFailure((InetSocketAddress) silent.getLocalSocketAddress());
            assertInstanceOf(MooringTimeoutException.class, timedOut, timedOut::toString);
            assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(250), "after the handshake timeout");
        }
    }

    private MooringException connectFailure(InetSocketAddress peer) {
        var failed = assertThrows(ExecutionException.class,
                () -> endpoint.connectAsync(peer).get(30, TimeUnit.SECONDS));
        return assertInstanceOf(MooringException.class, failed.getCause());
    }

    /**
     * A handshake in progress already has its QPs on the endpoint's shared receive queue: closing the endpoint breaks it
     * off and waits until it has freed them, so the queue and its receive blocks go with the endpoint (they stayed, and
     * the blocks were never given back, when the close did not wait).
     */
    @Test
    void closingTheEndpointBreaksOffAHandshakeInProgress() throws Exception {
        long liveBefore = arena.stats().liveBlocks();
        var patient = RdmaEndpoint.builder(pd, arena).isolation(Isolation.WINDOW)
                .handshakeTimeout(Duration.ofSeconds(60)).build();
        var listener = patient.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        var silent = new Socket(listener.address().getAddress(), listener.address().getPort());
        try {
            Greeting.sayHello(silent); // admitted: the endpoint makes the QPs, then waits in the bootstrap
            Greeting.awaitVerdict(silent);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (queuePairs() == 0) {
                if (System.nanoTime() > deadline) throw new AssertionError("the handshake made no QP");
                Thread.sleep(2);
            }
            patient.close();
            assertEquals(0, queuePairs(), pd.resource().children()::toString);
            assertEquals(liveBefore, arena.stats().liveBlocks(), "the receive blocks went back to the arena");
        } finally {
            silent.close();
        }
    }

    private long queuePairs() {
        return pd.resource().children().stream().filter(c -> c.kind().equals("qp")).count();
    }

    /** Lets {@code peer} connect and misbehave, and waits until the listener refused it. */
    private void refuse(RdmaListener listener, Peer peer) throws Exception {
        long before = listener.refused();
        try (var socket = new Socket(listener.address().getAddress(), listener.address().getPort())) {
            peer.misbehave(socket);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (listener.refused() == before) {
                if (System.nanoTime() > deadline) throw new AssertionError("the listener never refused the peer");
                Thread.sleep(2);
            }
        }
    }

    private static long openFds() throws IOException {
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }
}
