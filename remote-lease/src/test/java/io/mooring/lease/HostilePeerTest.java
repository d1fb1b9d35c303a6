package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.lifecycle.Housekeeper;
import io.mooring.lifecycle.MooringTimeoutException;
import io.mooring.verbs.testing.FaultPlan;
import io.mooring.verbs.values.Access;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Promises an endpoint keeps against peers that do not play along (issue: "an adversarial peer broke these promises"):
 * limits hold per peer across its sessions; a peer that stops taking messages loses its session and every block it
 * held comes back; a wedged peer delays no other peer's lease; an operation that cannot finish before its lease's
 * deadline is refused before it can fail on the NIC; and a flood of control messages makes none of this side's tables,
 * timers or logs grow with its count — only with what the limits allow at once.
 */
@Timeout(120)
class HostilePeerTest extends EndpointPeers {
    /** Housekeeper tasks of other modules that may come or go meanwhile: a collector pass per arena. */
    private static final int OTHERS_WORK = 4;

    /** Promise 2: one peer with three sessions holds what the limits allow one peer, not three times that. */
    @Test
    void limitsHoldPerPeerAcrossItsSessions() throws Exception {
        var limits = LeaseLimits.builder().maxBytes(1 << 20).maxLeases(4)
                .maxDuration(Duration.ofMinutes(1)).maxLifetime(Duration.ofMinutes(5))
                .maxAccess(RW).grace(Duration.ofMillis(50)).build();
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).limits(limits));
        RdmaEndpoint peer = peerEndpoint();
        List<RemoteSegment> held = new ArrayList<>();
        int refused = 0;
        for (int s = 0; s < 3; s++) {
            var accepted = listener.acceptAsync();
            RdmaSession session = peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
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
     * A value offered to a peer and then closed by the owner: the peer is asked once to stop (REVOKE at the close), not
     * again when the lease ends — one request per end, not per way of learning it.
     */
    @Test
    void aPeerIsToldOfAClosedValuesEndOnce() throws Exception {
        var limits = LeaseLimits.builder().maxBytes(1 << 20).maxLeases(64)
                .maxDuration(Duration.ofMinutes(1)).maxLifetime(Duration.ofMinutes(5))
                .maxAccess(RW).grace(Duration.ofMillis(100)).build();
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).limits(limits));
        var accepted = listener.acceptAsync();
        try (RawPeer peer = new RawPeer(peerPd, listener.address())) {
            RdmaSession owner = accepted.get(10, TimeUnit.SECONDS);
            Block value = ownerArena.allocateShared(64, 8);
            Lease lease = owner.offer(value, Duration.ofSeconds(30), EnumSet.of(Access.REMOTE_READ));
            value.close();
            assertEquals(EndReason.OWNER_CLOSED, lease.ended().get(10, TimeUnit.SECONDS));
            List<Message> told = peer.everything(Duration.ofMillis(300));
            assertEquals(1, told.stream().filter(m -> m instanceof Message.Offer).count(), told::toString);
            assertEquals(1, told.stream().filter(m -> m instanceof Message.Revoke r && r.leaseId() == lease.id()).count(),
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
                .limits(LeaseLimits.builder().maxBytes(1 << 20).maxLeases(64)
                        .maxDuration(Duration.ofMinutes(1)).maxLifetime(Duration.ofMinutes(5))
                        .maxAccess(RW).grace(Duration.ZERO).build()));
        var accepted = listener.acceptAsync();
        try (RawPeer peer = new RawPeer(peerPd, listener.address())) {
            RdmaSession owner = accepted.get(10, TimeUnit.SECONDS);
            for (int i = 1; i <= 20; i++) {
                peer.send(new Message.Request(i, 4096, 8, Access.mask(RW), Duration.ofMillis(200).toNanos()));
                assertInstanceOf(Message.Grant.class, peer.nextAnswer("request " + i));
            }
            peer.stopReceiving(); // 20 leases expire: 20 REVOKEs, of which at most 16 find a receive
            SessionEnd end = owner.closed().get(60, TimeUnit.SECONDS);
        String why = end.reason();
            assertEquals(SessionEnd.How.LOST, end.how(), why);
            // What stays: the endpoint's shared receive blocks, kept posted for the next sessions.
            awaitTrue(() -> ownerArena.stats().liveBlocks() == ownerEndpoint.receives().posted(),
                    "every block the wedged session held to return");
            assertEquals(0, owner.leases().stats().active());
        }
    }

    /**
     * A REQUEST whose window bind is still held back when the peer drops the connection: the bind flushes, the grant
     * fails, and its block goes back to the arena once — no exception escapes the agent (issue 26, finding 8: it
     * closed the block the failed grant had already given back, "block ... is already closed").
     */
    @Test
    void aGrantCutOffByTheSessionsLossGivesItsBlockBackOnce() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).isolation(Isolation.WINDOW));
        var accepted = listener.acceptAsync();
        RdmaSession owner;
        try (RawPeer peer = new RawPeer(peerPd, listener.address())) {
            owner = accepted.get(10, TimeUnit.SECONDS);
            try (var slow = owner.queuePair().injectFaults(FaultPlan.seeded(26).delayLocal(1, Duration.ofSeconds(1)))) {
                peer.send(new Message.Request(1, 4096, 8, Access.mask(RW), Duration.ofSeconds(30).toNanos()));
                awaitTrue(() -> owner.queuePair().outstandingSends() > 0, "the grant's bind to be posted");
                peer.hangUp(); // while the bind is held back: it flushes
                owner.closed().get(10, TimeUnit.SECONDS);
                awaitTrue(() -> ownerArena.stats().liveBlocks() == ownerEndpoint.receives().posted(),
                        "the failed grant's block to return");
                assertEquals(1, slow.counts().of(FaultPlan.Fault.LOCAL_DELAY), slow::toString);
            }
        }
        assertEquals(List.of(), log.entries().stream().filter(e -> e.thrown() != null).toList(),
                "nothing escapes the agent");
    }

    /**
     * A goodbye that counts messages the peer never sent ends its session as a loss once the wait for them runs out —
     * neither a clean end, which would promise the application everything was received, nor a session left waiting.
     */
    @Test
    void aGoodbyeCountingMessagesNeverSentLosesTheSession() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena));
        var accepted = listener.acceptAsync();
        try (RawPeer peer = new RawPeer(peerPd, listener.address())) {
            RdmaSession owner = accepted.get(10, TimeUnit.SECONDS);
            peer.goodbye(3);
            SessionEnd end = owner.closed().get(30, TimeUnit.SECONDS);
        String why = end.reason();
            assertTrue(why.contains(" lost: the peer closed the session after 3 messages, of which 0 arrived"), why);
            assertThrows(SessionLostException.class, owner::receive);
        }
    }

    /**
     * Promise 5: lease ends never wait on a peer, so a peer whose control messages are stuck delays no other peer's
     * lease: an honest 1 s lease ends on time while a wedged peer's REVOKEs cannot be delivered.
     */
    @Test
    void aWedgedPeerDelaysNoOtherPeersLease() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena)
                .limits(LeaseLimits.builder().maxBytes(1 << 20).maxLeases(64)
                        .maxDuration(Duration.ofMinutes(1)).maxLifetime(Duration.ofMinutes(5))
                        .maxAccess(RW).grace(Duration.ofMillis(50)).build()));
        var wedgedSide = listener.acceptAsync();
        try (RawPeer wedged = new RawPeer(peerPd, listener.address())) {
            wedgedSide.get(10, TimeUnit.SECONDS);
            for (int i = 1; i <= 24; i++) {
                wedged.send(new Message.Request(i, 64, 8, Access.mask(RW), Duration.ofMillis(300).toNanos()));
                wedged.nextAnswer("request " + i);
            }
            wedged.stopReceiving();
            var honestSide = listener.acceptAsync();
            RdmaSession honest = peerEndpoint().connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
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
        var accepted = listener.acceptAsync();
        RdmaSession requester = peerEndpoint().connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
        RdmaSession owner = accepted.get(10, TimeUnit.SECONDS);
        try (RemoteSegment lease = requester.requestRemote(64 << 20, Duration.ofMillis(600), RW);
             Block big = peerArena.allocate(64 << 20); Block small = peerArena.allocate(8)) {
            var e = assertThrows(LeaseExpiredException.class, () -> lease.write(big, 0));
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
        var accepted = listener.acceptAsync();
        RdmaSession requester = peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
        RdmaSession owner = accepted.get(10, TimeUnit.SECONDS);
        RemoteSegment lease = guessPastALease(requester);
        requester.close(); // at once, as a guessing peer would: its closing the connection is no clean end
        SessionEnd end = owner.closed().get(10, TimeUnit.SECONDS);
        String why = end.reason();
        assertEquals(SessionEnd.How.LOST, end.how(), why);
        try (Block spare = ownerArena.allocate(64)) {
            var refused = assertThrows(LeaseRefusedException.class, () -> owner.leases().grant(spare,
                    Duration.ofSeconds(1), RW), "a lost session's manager grants nothing");
            assertEquals(ErrorCodes.SHUTTING_DOWN, refused.code(), refused.getMessage());
        }
        var barred = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS));
        var refusal = assertInstanceOf(SessionRefusedException.class, barred.getCause(), "refused at once");
        assertEquals(SessionRefusedException.Reason.BARRED, refusal.reason(), refusal.getMessage());
        Thread.sleep(900);
        var again = listener.acceptAsync();
        peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS).close();
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
        var cover = listener.acceptAsync();
        RdmaSession honest = peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
        cover.get(10, TimeUnit.SECONDS);
        var accepted = listener.acceptAsync();
        RdmaSession guesser = peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
        RdmaSession owner = accepted.get(10, TimeUnit.SECONDS);
        RemoteSegment lease = guessPastALease(guesser);
        guesser.close();
        assertEquals(SessionEnd.How.LOST, owner.closed().get(10, TimeUnit.SECONDS).how());
        honest.close(); // a clean end, of a session set up before the failure
        awaitTrue(() -> ownerEndpoint.sessions().isEmpty(), "the honest session to end at the owner");
        var barred = assertThrows(java.util.concurrent.ExecutionException.class,
                () -> peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS), "the bar still holds");
        var refusal = assertInstanceOf(SessionRefusedException.class, barred.getCause(), "refused at once");
        assertEquals(SessionRefusedException.Reason.BARRED, refusal.reason(), refusal.getMessage());
        lease.close();
    }

    // ---- floods: nothing a peer sends may grow this side's tables, timers or logs with its count ----

    /** A raw peer's session: the peer sends what it likes, {@code session} is this side's. */
    private record Raw(RawPeer peer, RdmaSession session) implements AutoCloseable {
        @Override
        public void close() throws java.io.IOException {
            peer.close();
        }
    }

    private Raw rawSession(RdmaListener listener) throws Exception {
        var accepted = listener.acceptAsync();
        RawPeer peer = new RawPeer(peerPd, listener.address());
        try {
            return new Raw(peer, accepted.get(10, TimeUnit.SECONDS));
        } catch (Exception e) {
            peer.close();
            throw e;
        }
    }

    /**
     * Offers nobody takes, past the backlog of 64, are released — and a release nobody acknowledges must not wait in
     * the table of unanswered requests (with a timer each) for the request timeout: that table would grow with the
     * peer's send rate times the timeout.
     */
    @Test
    void offersPastTheBacklogLeaveNoUnansweredRequests() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).requestTimeout(Duration.ofMinutes(1)));
        try (Raw raw = rawSession(listener)) {
            RawPeer peer = raw.peer();
            RdmaSession session = raw.session();
            int extra = 200;
            int releases = 0;
            for (int i = 1; i <= Offers.BACKLOG + extra; i++) {
                peer.send(new Message.Offer(i, i, 0x1000L * i, 64, 0x100 + i, Access.mask(RW),
                        Duration.ofMinutes(1).toNanos(), i));
                // Each offer past the backlog is released: the peer takes the RELEASE (keeping its receives posted even
                // if this thread stalls, which a burst of RNRs would punish) and never answers it.
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
                while (releases < i - Offers.BACKLOG && System.nanoTime() < deadline) {
                    releases += (int) peer.everything(Duration.ofMillis(2)).stream()
                            .filter(m -> m instanceof Message.Release).count();
                }
            }
            assertEquals(extra, releases, "a RELEASE per offer past the backlog; " + session.lostReason());
            assertEquals(0, session.client().pendingRequests(), "releases of untaken offers wait for no answer");
            assertEquals(null, session.lostReason());
            long warnings = log.entries().stream().filter(e -> e.level() == System.Logger.Level.WARNING
                    && e.message().contains("offers untaken")).count();
            assertEquals(1, warnings, "one warning per session, not one per offer");
            // The backlog is intact: the first 64 offers are still there to take.
            for (int i = 1; i <= Offers.BACKLOG; i++) {
                RemoteSegment s = session.receiveOffer(Duration.ofSeconds(5));
                assertEquals(i, s.leaseId());
                s.closeAsync();
            }
            assertTrue(session.receiveOfferAsync().isDone() == false, "nothing past the backlog was kept");
        }
    }

    /**
     * A RENEW moves the lease's expiry, and a RELEASE ends it before it: each cancels a housekeeper task. Cancelled tasks
     * must leave the housekeeper's queue — else each stays, holding its lease, until its original deadline (up to the
     * longest grant), and a peer renewing or requesting and releasing in a loop grows the queue by its rate times that.
     * The same for the handshakes' deadlines, disarmed by every handshake that finishes in time. The housekeeper is
     * shared: an arena's collector pass may be waiting too ({@link #OTHERS_WORK}), against 400 and 20 tasks kept here.
     */
    @Test
    void renewsAndReleasesLeaveNoCancelledTimersBehind() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).failureBackoff(Duration.ZERO));
        int timersBefore = Housekeeper.shared().tasks();
        try (Raw raw = rawSession(listener)) {
            RawPeer peer = raw.peer();
            RdmaSession session = raw.session();
            long minute = Duration.ofMinutes(1).toNanos();
            long id = 0;
            peer.send(new Message.Request(++id, 64, 8, Access.mask(RW), minute));
            long lease = ((Message.Grant) peer.nextAnswer("the first request")).leaseId();
            for (int i = 0; i < 300; i++) {
                peer.send(new Message.Renew(++id, lease, minute));
                assertTrue(peer.nextAnswer("renew " + i) instanceof Message.Renewed);
            }
            for (int i = 0; i < 100; i++) {
                peer.send(new Message.Request(++id, 64, 8, Access.mask(RW), minute));
                long other = ((Message.Grant) peer.nextAnswer("request " + i)).leaseId();
                peer.send(new Message.Release(++id, other));
                assertTrue(peer.nextAnswer("release " + i) instanceof Message.ReleaseAck);
            }
            int grown = Housekeeper.shared().tasks() - timersBefore;
            assertTrue(grown <= 1 + OTHERS_WORK, "the housekeeper holds " + grown + " more tasks for the one live lease");
            assertEquals(null, session.lostReason());
        }
        int deadlinesBefore = Housekeeper.shared().tasks();
        for (int i = 0; i < 10; i++) {
            var next = listener.acceptAsync();
            new RawPeer(peerPd, listener.address()).close();
            next.get(10, TimeUnit.SECONDS).close();
        }
        int grown = Housekeeper.shared().tasks() - deadlinesBefore;
        assertTrue(grown <= OTHERS_WORK, "the housekeeper holds " + grown + " more tasks after 10 handshakes that"
                + " finished");
    }

    /**
     * A peer that takes this side's requests and never answers them: each waits the request timeout, so the table of
     * unanswered requests must be bounded by a count — past it a request is refused at once (back-pressure), not
     * added.
     */
    @Test
    void unansweredRequestsAreBoundedAndTheNextIsRefused() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).requestTimeout(Duration.ofMinutes(1)));
        try (Raw raw = rawSession(listener)) {
            RawPeer silent = raw.peer();
            RdmaSession session = raw.session();
            int asked = 0;
            FlowControlException refused = null;
            while (refused == null && asked < LeaseClient.MAX_PENDING + 64) {
                for (int i = 0; i < 8 && refused == null; i++) {
                    try {
                        session.requestRemoteAsync(64, Duration.ofSeconds(30), RW);
                        asked++;
                    } catch (FlowControlException e) {
                        refused = e;
                    }
                }
                silent.everything(Duration.ofMillis(5)); // takes the REQUESTs (reposting its receives), answers none
            }
            assertTrue(refused != null, asked + " requests wait for answers and none was refused");
            assertEquals(LeaseClient.MAX_PENDING, asked);
            assertEquals(LeaseClient.MAX_PENDING, session.client().pendingRequests());
            assertTrue(refused.getMessage().contains("wait for the peer's answer"), refused.getMessage());
            assertEquals(null, session.lostReason(), "refusing a request is back-pressure, not a loss");
        }
    }

    /**
     * A peer that takes this side's control requests and answers none in time: each fails after the request timeout
     * with a {@link MooringTimeoutException} naming the request and the time — a REQUEST, a RENEW, a RELEASE — and
     * the session lives on: a request answered in time is granted.
     */
    @Test
    void anUnansweredRequestTimesOutAndTheSessionGoesOn() throws Exception {
        var quick = RdmaEndpoint.builder(ownerPd, ownerArena).requestTimeout(Duration.ofMillis(300));
        RdmaListener listener = listen(quick);
        try (Raw raw = rawSession(listener)) {
            RdmaSession session = raw.session();
            var unanswered = session.requestRemoteAsync(64, Duration.ofSeconds(30), RW);
            long id = requestOf(raw.peer()).requestId();
            var e = assertThrows(ExecutionException.class, () -> unanswered.get(10, TimeUnit.SECONDS));
            var timeout = assertInstanceOf(MooringTimeoutException.class, e.getCause());
            assertEquals("no answer to REQUEST " + id + " within the request timeout (PT0.3S) from "
                    + session.peerAddress() + "; the session goes on", timeout.getMessage());
            assertEquals(null, session.lostReason(), "a timeout is no loss");

            var answered = session.requestRemoteAsync(64, Duration.ofSeconds(30), RW);
            raw.peer().send(new Message.Grant(requestOf(raw.peer()).requestId(), 7, 0x1000, 64, 1,
                    Duration.ofSeconds(30).toNanos()));
            RemoteSegment segment = answered.get(10, TimeUnit.SECONDS);
            var renew = assertThrows(MooringTimeoutException.class, () -> segment.renew(Duration.ofSeconds(30)));
            assertTrue(renew.getMessage().startsWith("no answer to RENEW "), renew.getMessage());
            var release = assertThrows(MooringTimeoutException.class, segment::close);
            assertTrue(release.getMessage().startsWith("no answer to RELEASE "), release.getMessage());
            assertEquals(null, session.lostReason(), "the session lives on");
            assertEquals(0, session.client().pendingRequests(), "nothing waits any more");
        }
    }

    /** The next REQUEST the raw peer receives. */
    static Message.Request requestOf(RawPeer peer) throws InterruptedException {
        for (int i = 0; i < 100; i++) {
            for (Message m : peer.everything(Duration.ofMillis(20))) if (m instanceof Message.Request r) return r;
        }
        throw new AssertionError("no REQUEST came");
    }

    /**
     * Connections from many addresses (a peer owning an IPv6 prefix has plenty): the endpoint keeps an account per
     * address while it holds something there — a session, a lease, a recent loss — and not for every address that
     * ever connected.
     */
    @Test
    void accountsOfPeersThatHoldNothingAreForgotten() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena));
        try (Raw held = rawSession(listener)) { // from 127.0.0.1: its session holds its account
            int addresses = 50;
            for (int i = 0; i < addresses; i++) {
                try (var socket = new java.net.Socket()) { // connects and hangs up: its handshake fails
                    socket.bind(new InetSocketAddress(InetAddress.getByAddress(new byte[] {127, 0, 1, (byte) (i + 1)}), 0));
                    socket.connect(listener.address(), 10_000);
                }
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (listener.refused() < addresses && System.nanoTime() < deadline) Thread.sleep(10);
            assertEquals(addresses, listener.refused());
            Thread.sleep(3 * RdmaEndpoint.HEALTH_CHECK.toMillis());
            assertEquals(1, ownerEndpoint.peerAccounts(), "accounts kept: the live session's only");
            assertEquals(null, held.session().lostReason());
        }
    }

    /**
     * A peer returns credits for messages this side never sent: never an honest peer (it returns one per message it
     * took), and a count that would overflow this side's — so it loses the session, naming why.
     */
    @Test
    void creditsBeyondWhatWasSentLoseTheSession() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena));
        try (Raw raw = rawSession(listener)) {
            raw.peer().send(new Message.Credit(1, Integer.MAX_VALUE));
            SessionEnd end = raw.session().closed().get(10, TimeUnit.SECONDS);
        String why = end.reason();
            assertTrue(why.contains(" lost: the peer returned 2147483647 credits"), why);
        }
    }
}
