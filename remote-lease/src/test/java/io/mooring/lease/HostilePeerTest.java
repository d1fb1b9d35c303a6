package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.CapturedLog;
import io.mooring.verbs.Access;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Promises an endpoint keeps against peers that do not play along (issue: "an adversarial peer broke these promises"):
 * limits hold per peer across its sessions; a peer that stops taking messages loses its session and every block it
 * held comes back; a wedged peer delays no other peer's lease; an operation that cannot finish before its lease's
 * deadline is refused before it can fail on the NIC.
 */
@Timeout(120)
class HostilePeerTest {
    private static final Set<Access> RW = EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE);

    @RegisterExtension
    final CapturedLog log = new CapturedLog(RdmaSession.class.getPackageName());

    private final ResourceGraph graph = ResourceGraph.builder().name("hostile").build();
    private final ProtectionDomain ownerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
    private final ProtectionDomain peerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
    private final RdmaArena ownerArena = arena(ownerPd);
    private final RdmaArena peerArena = arena(peerPd);
    private final List<AutoCloseable> closeLast = new ArrayList<>();
    private RdmaEndpoint ownerEndpoint;

    private static RdmaArena arena(ProtectionDomain pd) {
        return RdmaArena.builder(pd).chunkSize(1 << 20).shards(1).access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND))
                .build();
    }

    @AfterEach
    void teardown() throws Exception {
        for (AutoCloseable c : closeLast.reversed()) c.close();
        ownerArena.close();
        peerArena.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
    }

    private RdmaListener listen(RdmaEndpoint.Builder builder) throws Exception {
        ownerEndpoint = builder.build();
        closeLast.add(ownerEndpoint);
        RdmaListener listener = ownerEndpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        closeLast.add(listener);
        return listener;
    }

    private RdmaEndpoint peerEndpoint() {
        RdmaEndpoint endpoint = RdmaEndpoint.builder(peerPd, peerArena).build();
        closeLast.add(endpoint);
        return endpoint;
    }

    /** Promise 2: one peer with three sessions holds what the limits allow one peer, not three times that. */
    @Test
    void limitsHoldPerPeerAcrossItsSessions() throws Exception {
        var limits = new LeaseLimits(1 << 20, 4, Duration.ofMinutes(1), Duration.ofMinutes(5), RW, Duration.ofMillis(50));
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).limits(limits));
        RdmaEndpoint peer = peerEndpoint();
        List<RemoteSegment> held = new ArrayList<>();
        int refused = 0;
        for (int s = 0; s < 3; s++) {
            var accepted = listener.accept();
            RdmaSession session = peer.connect(listener.address()).get(10, TimeUnit.SECONDS);
            accepted.get(10, TimeUnit.SECONDS);
            for (int i = 0; i < 2; i++) {
                try {
                    held.add(session.requestRemote(64, Duration.ofSeconds(30), RW));
                } catch (LeaseRefusedException e) {
                    assertTrue(e.getMessage().contains("across its sessions, the limit is 4"), e.getMessage());
                    refused++;
                }
            }
        }
        assertEquals(4, held.size());
        assertEquals(2, refused);
        InetAddress peerAddress = InetAddress.getLoopbackAddress();
        assertEquals(new RdmaEndpoint.PeerUsage(4, 4 * 64), ownerEndpoint.usage(peerAddress));
        held.forEach(RemoteSegment::close);
        assertEquals(new RdmaEndpoint.PeerUsage(0, 0), ownerEndpoint.usage(peerAddress), "released leases stop counting");
    }

    /**
     * A value offered to a peer and then closed by the owner: the peer is told once (REVOKED at the close, a grace
     * period before the lease ends), not again when the lease ends — a notice per end, not per way of learning it.
     */
    @Test
    void aPeerIsToldOfAClosedValuesEndOnce() throws Exception {
        var limits = new LeaseLimits(1 << 20, 64, Duration.ofMinutes(1), Duration.ofMinutes(5), RW, Duration.ofMillis(100));
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).limits(limits));
        var accepted = listener.accept();
        try (RawPeer peer = new RawPeer(peerPd, listener.address())) {
            RdmaSession owner = accepted.get(10, TimeUnit.SECONDS);
            Block value = ownerArena.allocateShared(64, 8);
            Lease lease = owner.offer(value, Duration.ofSeconds(30), EnumSet.of(Access.REMOTE_READ));
            value.close();
            assertEquals(EndReason.OWNER_CLOSED, lease.ended().get(10, TimeUnit.SECONDS));
            List<Message> told = peer.everything(Duration.ofMillis(300));
            assertEquals(1, told.stream().filter(m -> m instanceof Message.Offer).count(), told::toString);
            assertEquals(1, told.stream().filter(m -> m instanceof Message.Revoked r && r.leaseId() == lease.id()).count(),
                    told::toString);
        }
    }

    /**
     * Promise 3: a peer that stops taking control messages stalls the owner's SENDs; bounded RNR retries declare it
     * lost, its leases are revoked and every block it held — leased or buffer — returns to the arena.
     */
    @Test
    void aWedgedPeerLosesItsSessionAndEveryBlockComesBack() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).failureBackoff(Duration.ZERO)
                .limits(new LeaseLimits(1 << 20, 64, Duration.ofMinutes(1), Duration.ofMinutes(5), RW, Duration.ZERO)));
        var accepted = listener.accept();
        try (RawPeer peer = new RawPeer(peerPd, listener.address())) {
            RdmaSession owner = accepted.get(10, TimeUnit.SECONDS);
            for (int i = 1; i <= 20; i++) {
                peer.send(new Message.Request(i, 4096, 8, Access.mask(RW), Duration.ofMillis(200).toNanos()));
                assertInstanceOf(Message.Grant.class, peer.nextAnswer("request " + i));
            }
            peer.stopReceiving(); // 20 leases expire: 20 REVOKED, of which at most 16 find a receive
            String why = owner.closed().get(60, TimeUnit.SECONDS);
            assertTrue(why.contains(" lost: "), why);
            // What stays: the endpoint's shared receive blocks, kept posted for the next sessions.
            awaitTrue(() -> ownerArena.stats().liveBlocks() == ownerEndpoint.receives().posted(),
                    "every block the wedged session held to return");
            assertEquals(0, owner.leases().stats().active());
        }
    }

    /**
     * A goodbye that counts messages the peer never sent ends its session as a loss once the wait for them runs out —
     * neither a clean end, which would promise the application everything was received, nor a session left waiting.
     */
    @Test
    void aGoodbyeCountingMessagesNeverSentLosesTheSession() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena));
        var accepted = listener.accept();
        try (RawPeer peer = new RawPeer(peerPd, listener.address())) {
            RdmaSession owner = accepted.get(10, TimeUnit.SECONDS);
            peer.goodbye(3);
            String why = owner.closed().get(30, TimeUnit.SECONDS);
            assertTrue(why.contains(" lost: the peer closed the session after 3 messages, of which 0 arrived"), why);
            assertThrows(SessionLostException.class, owner::receive);
        }
    }

    /**
     * Promise 5: lease ends never wait on a peer, so a peer whose control messages are stuck delays no other peer's
     * lease: an honest 1 s lease ends on time while a wedged peer's REVOKEDs cannot be delivered.
     */
    @Test
    void aWedgedPeerDelaysNoOtherPeersLease() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena)
                .limits(new LeaseLimits(1 << 20, 64, Duration.ofMinutes(1), Duration.ofMinutes(5), RW,
                        Duration.ofMillis(50))));
        var wedgedSide = listener.accept();
        try (RawPeer wedged = new RawPeer(peerPd, listener.address())) {
            wedgedSide.get(10, TimeUnit.SECONDS);
            for (int i = 1; i <= 24; i++) {
                wedged.send(new Message.Request(i, 64, 8, Access.mask(RW), Duration.ofMillis(300).toNanos()));
                wedged.nextAnswer("request " + i);
            }
            wedged.stopReceiving();
            var honestSide = listener.accept();
            RdmaSession honest = peerEndpoint().connect(listener.address()).get(10, TimeUnit.SECONDS);
            RdmaSession owner = honestSide.get(10, TimeUnit.SECONDS);
            long start = System.nanoTime();
            RemoteSegment lease = honest.requestRemote(64, Duration.ofSeconds(1), RW);
            owner.leases().lease(lease.leaseId()).ended().get(10, TimeUnit.SECONDS);
            long tookMillis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(tookMillis < 2_500, "a 1 s lease (50 ms grace) ended after " + tookMillis + " ms");
            lease.close();
        }
    }

    /**
     * Promise 7: a transfer that cannot finish before the lease's deadline (a 64 MiB WRITE with half a second left) is
     * refused before posting, instead of being revoked under it, which would end the session; the session goes on.
     */
    @Test
    void aTransferThatCannotFinishBeforeTheDeadlineIsRefusedLocally() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena));
        var accepted = listener.accept();
        RdmaSession requester = peerEndpoint().connect(listener.address()).get(10, TimeUnit.SECONDS);
        RdmaSession owner = accepted.get(10, TimeUnit.SECONDS);
        try (RemoteSegment lease = requester.requestRemote(64 << 20, Duration.ofMillis(600), RW);
             Block big = peerArena.allocate(64 << 20); Block small = peerArena.allocate(8)) {
            var e = assertThrows(IllegalStateException.class, () -> lease.write(big, 0));
            assertTrue(e.getMessage().contains("too soon for 67108864 bytes"), e.getMessage());
            lease.write(small, 0);
        }
        assertEquals(null, requester.lostReason());
        assertEquals(null, owner.lostReason());
    }

    /**
     * Promise 1, in part: a peer whose access fails (here a raw WRITE past its lease, as a key guess would) loses the
     * session — its manager stops granting — and its next session is refused until the backoff has passed, so guessing
     * costs a growing wait per wrong guess instead of one reconnect.
     */
    @Test
    void aPeerWhoseAccessFailsLosesItsSessionAndWaitsBeforeTheNext() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).failureBackoff(Duration.ofMillis(800)));
        RdmaEndpoint peer = peerEndpoint();
        var accepted = listener.accept();
        RdmaSession requester = peer.connect(listener.address()).get(10, TimeUnit.SECONDS);
        RdmaSession owner = accepted.get(10, TimeUnit.SECONDS);
        RemoteSegment lease = guessPastALease(requester);
        requester.close(); // at once, as a guessing peer would: its closing the connection is no clean end
        String why = owner.closed().get(10, TimeUnit.SECONDS);
        assertTrue(why.contains(" lost: "), why);
        try (Block spare = ownerArena.allocate(64)) {
            var refused = assertThrows(LeaseRefusedException.class, () -> owner.leases().grant(spare,
                    Duration.ofSeconds(1), RW), "a lost session's manager grants nothing");
            assertEquals(ErrorCodes.SHUTTING_DOWN, refused.code(), refused.getMessage());
        }
        var barred = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> peer.connect(listener.address()).get(10, TimeUnit.SECONDS));
        assertInstanceOf(java.io.IOException.class, barred.getCause(), "refused at once: " + barred.getCause());
        Thread.sleep(900);
        var again = listener.accept();
        peer.connect(listener.address()).get(10, TimeUnit.SECONDS).close();
        again.get(10, TimeUnit.SECONDS).close();
        lease.close();
    }

    /**
     * A guessing peer keeps a second, honest session open and closes it cleanly right after each failed guess: that
     * clean end must not lift the bar the failure imposed (nor forgive the failure), or every wrong guess would cost
     * one reconnect instead of a growing wait.
     */
    @Test
    void aCleanEndOfASessionOpenBeforeAFailureForgivesNothing() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).failureBackoff(Duration.ofMillis(800)));
        RdmaEndpoint peer = peerEndpoint();
        var cover = listener.accept();
        RdmaSession honest = peer.connect(listener.address()).get(10, TimeUnit.SECONDS);
        cover.get(10, TimeUnit.SECONDS);
        var accepted = listener.accept();
        RdmaSession guesser = peer.connect(listener.address()).get(10, TimeUnit.SECONDS);
        RdmaSession owner = accepted.get(10, TimeUnit.SECONDS);
        RemoteSegment lease = guessPastALease(guesser);
        guesser.close();
        assertTrue(owner.closed().get(10, TimeUnit.SECONDS).contains(" lost: "));
        honest.close(); // a clean end, of a session set up before the failure
        awaitTrue(() -> ownerEndpoint.sessions().isEmpty(), "the honest session to end at the owner");
        var barred = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> peer.connect(listener.address()).get(10, TimeUnit.SECONDS), "the bar still holds");
        assertInstanceOf(java.io.IOException.class, barred.getCause(), "refused at once: " + barred.getCause());
        lease.close();
    }

    /** Leases 64 bytes over {@code requester} and WRITEs just past them with the raw QP, as a key guess would. */
    private RemoteSegment guessPastALease(RdmaSession requester) throws Exception {
        RemoteSegment lease = requester.requestRemote(64, Duration.ofSeconds(30), RW);
        try (Block src = peerArena.allocateShared(8, 8)) {
            var guess = requester.queuePair().postAsync(io.mooring.verbs.WorkRequest.write(src.region(),
                    src.regionOffset(), 8).remote(lease.address() + 64, lease.rkey()));
            var failed = assertThrows(java.util.concurrent.ExecutionException.class, () -> guess.get(10, TimeUnit.SECONDS));
            assertEquals(io.mooring.verbs.WcStatus.REM_ACCESS_ERR,
                    ((io.mooring.verbs.WorkCompletionException) failed.getCause()).status());
        }
        return lease;
    }

    private static void awaitTrue(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("waited 30 s for " + what);
            Thread.sleep(10);
        }
    }
}
