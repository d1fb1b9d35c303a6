package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.CapturedLog;
import io.mooring.testing.HeapAfterGc;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * One endpoint serving {@value #PEERS} peer sessions, every one used (a message each way and a lease), costs no
 * platform thread per session and little heap (issue 26, finding 9: 190 KiB per session end, most of it the soft QPs'
 * send slots made up front); closing them leaves nothing. {@code -Dmooring.lease.verbose=true} prints what the
 * sessions cost (setup time, heap, file descriptors, threads), {@code -Dmooring.lease.peers=1000} at 1,000 sessions:
 * the figures in docs/verification.md.
 */
@Timeout(300)
class ManySessionsTest {
    /** The sessions' INFO lines (peers closing, refusals) are expected; kept out of the build output. */
    @RegisterExtension
    final CapturedLog log = new CapturedLog("io.mooring.lease");

    private static final int PEERS = Integer.getInteger("mooring.lease.peers", 256);
    /** The devices of the two ends (in the rxe VM: {@code -Dmooring.lease.test.owner=ibv:rxe0}, and the requester). */
    private static final String OWNER_DEVICE = System.getProperty("mooring.lease.test.owner", "soft:soft0");
    private static final String PEER_DEVICE = System.getProperty("mooring.lease.test.requester", "soft:soft0");
    /** Under CPU emulation (the rxe VM) many connects at once take longer than the default 10 s. */
    private static final Duration HANDSHAKE =
            Duration.ofSeconds(Integer.getInteger("mooring.lease.handshakeSeconds", 10));
    /**
     * Heap per session end, endpoints sized for the sessions included (their CQ, the receive blocks' handles): about
     * 16 KiB measured at 1,000 sessions (the goal: 16 KiB beyond the registered buffers), against 190 KiB once; the
     * bound leaves room for a coarse measure.
     */
    private static final long HEAP_BOUND = 20 * 1024;

    @Test
    void oneEndpointServesManyPeersWithoutAThreadEach() throws Exception {
        var graph = ResourceGraph.builder().name("many").build();
        ProtectionDomain ownerPd = RdmaDevices.open(OWNER_DEVICE, graph).allocateProtectionDomain();
        ProtectionDomain peerPd = RdmaDevices.open(PEER_DEVICE, graph).allocateProtectionDomain();
        RdmaArena ownerArena = arena(ownerPd);
        RdmaArena peerArena = arena(peerPd);
        warmUp(ownerPd, ownerArena, peerPd, peerArena); // what a first session makes once (classes, fabric listener)
        var platformBefore = platformThreads();
        long fdsBefore = openFds();
        long heapBefore = HeapAfterGc.bytes();
        try (var owner = RdmaEndpoint.builder(ownerPd, ownerArena).maxSessions(PEERS).handshakeTimeout(HANDSHAKE)
                     .maxSessionsPerPeer(PEERS).build(); // every peer is on loopback: one peer by address
             var listener = owner.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             var peers = RdmaEndpoint.builder(peerPd, peerArena).maxSessions(PEERS).handshakeTimeout(HANDSHAKE)
                     .build()) {
            long start = System.nanoTime();
            var accepting = Thread.ofVirtual().start(() -> { // the server's accept loop
                for (int i = 0; i < PEERS; i++) listener.acceptAsync().join();
            });
            List<CompletableFuture<RdmaSession>> connecting = new ArrayList<>();
            for (int i = 0; i < PEERS; i++) connecting.add(peers.connectAsync(listener.address()));
            List<RdmaSession> clients = new ArrayList<>();
            for (var f : connecting) clients.add(f.get(120, TimeUnit.SECONDS));
            assertTrue(accepting.join(Duration.ofSeconds(120)), "every session accepted");
            long setupNanos = System.nanoTime() - start;
            assertEquals(PEERS, owner.sessions().size());

            // Every session works: a message each way, and a lease.
            for (RdmaSession c : clients) {
                try (Block b = peerArena.allocate(8)) {
                    c.send(b);
                }
            }
            for (RdmaSession s : owner.sessions()) {
                s.receive(Duration.ofSeconds(30)).close();
                try (Block b = ownerArena.allocate(8)) {
                    s.send(b);
                }
            }
            for (RdmaSession c : clients) {
                c.receive(Duration.ofSeconds(30)).close();
                try (RemoteSegment lease = c.requestRemote(64, Duration.ofSeconds(30), EnumSet.of(Access.REMOTE_WRITE));
                     Block b = peerArena.allocate(64)) {
                    lease.write(b, 0);
                }
            }
            Thread.sleep(500); // the soft requesters of quiet QPs end their threads after 100 ms, freeing their stacks
            long heap = HeapAfterGc.bytes() - heapBefore;
            var started = platformThreads();
            started.removeAll(platformBefore);
            int platformThreads = started.size();
            long fds = openFds() - fdsBefore;
            long perEnd = heap / (2L * PEERS);
            if (Boolean.getBoolean("mooring.lease.verbose")) {
                System.out.printf("%d peer sessions (and their %d client sessions, in this JVM): setup %.2f ms per"
                        + " session, heap +%.1f KiB per session end, fds +%d, platform threads +%d%n", PEERS, PEERS,
                        setupNanos / 1e6 / PEERS, perEnd / 1024.0, fds, platformThreads);
            }
            assertTrue(perEnd < HEAP_BOUND, "a session end costs " + perEnd + " bytes of heap");
            // Two dispatchers, the shared timers and carriers of virtual threads: none per session.
            assertTrue(platformThreads <= 16, PEERS + " sessions on each side started " + platformThreads
                    + " platform threads: " + started.stream().map(Thread::getName).sorted().toList());
            clients.forEach(RdmaSession::close);
        }
        ownerArena.close();
        peerArena.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
        assertTrue(openFds() - fdsBefore <= 4, "file descriptors left: " + (openFds() - fdsBefore));
    }

    private static void warmUp(ProtectionDomain ownerPd, RdmaArena ownerArena, ProtectionDomain peerPd,
                               RdmaArena peerArena) throws Exception {
        try (var owner = RdmaEndpoint.builder(ownerPd, ownerArena).build();
             var listener = owner.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             var peers = RdmaEndpoint.builder(peerPd, peerArena).build()) {
            var accepted = listener.acceptAsync();
            peers.connectAsync(listener.address()).get(30, TimeUnit.SECONDS).close();
            accepted.get(30, TimeUnit.SECONDS).close();
        }
    }

    private static RdmaArena arena(ProtectionDomain pd) {
        return RdmaArena.builder(pd).access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
    }

    private static java.util.Set<Thread> platformThreads() {
        var threads = new java.util.HashSet<>(Thread.getAllStackTraces().keySet());
        threads.removeIf(Thread::isVirtual);
        return threads;
    }

    private static long openFds() throws Exception {
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }
}
