package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
 * A hostile peer that floods this side with control messages: nothing it sends may make this side's tables, timers or
 * logs grow with the number of messages — only with what the limits allow at once.
 */
@Timeout(120)
class FloodTest {
    private static final Set<Access> RW = EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE);

    @RegisterExtension
    final CapturedLog log = new CapturedLog(RdmaSession.class.getPackageName());

    private final ResourceGraph graph = ResourceGraph.builder().name("flood").build();
    private final ProtectionDomain ownerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
    private final ProtectionDomain peerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
    private final RdmaArena ownerArena = RdmaArena.builder(ownerPd).chunkSize(1 << 20).shards(1)
            .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
    private final List<AutoCloseable> closeLast = new ArrayList<>();
    private RdmaEndpoint endpoint;

    /** A raw peer's session: the peer sends what it likes, {@code session} is this side's. */
    private record Raw(RawPeer peer, RdmaSession session) implements AutoCloseable {
        @Override
        public void close() throws java.io.IOException {
            peer.close();
        }
    }

    @AfterEach
    void teardown() throws Exception {
        for (AutoCloseable c : closeLast.reversed()) c.close();
        ownerArena.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
    }

    private RdmaListener listen(RdmaEndpoint.Builder builder) throws Exception {
        endpoint = builder.build();
        closeLast.add(endpoint);
        RdmaListener listener = endpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        closeLast.add(listener);
        return listener;
    }

    private Raw rawSession(RdmaListener listener) throws Exception {
        var accepted = listener.accept();
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
            for (int i = 1; i <= RdmaSession.OFFER_BACKLOG + extra; i++) {
                peer.send(new Message.Offer(i, i, 0x1000L * i, 64, 0x100 + i, Access.mask(RW),
                        Duration.ofMinutes(1).toNanos()));
                // Each offer past the backlog is released: the peer takes the RELEASE (keeping its receives posted even
                // if this thread stalls, which a burst of RNRs would punish) and never answers it.
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
                while (releases < i - RdmaSession.OFFER_BACKLOG && System.nanoTime() < deadline) {
                    releases += (int) peer.everything(Duration.ofMillis(2)).stream()
                            .filter(m -> m instanceof Message.Release).count();
                }
            }
            assertEquals(extra, releases, "a RELEASE per offer past the backlog; " + session.lostReason());
            assertEquals(0, session.pendingRequests(), "releases of untaken offers wait for no answer");
            assertEquals(null, session.lostReason());
            long warnings = log.entries().stream().filter(e -> e.level() == System.Logger.Level.WARNING
                    && e.message().contains("offers untaken")).count();
            assertEquals(1, warnings, "one warning per session, not one per offer");
            // The backlog is intact: the first 64 offers are still there to take.
            for (int i = 1; i <= RdmaSession.OFFER_BACKLOG; i++) {
                RemoteSegment s = session.receiveOffer(Duration.ofSeconds(5));
                assertEquals(i, s.leaseId());
                s.closeAsync();
            }
            assertTrue(session.receiveOfferAsync().isDone() == false, "nothing past the backlog was kept");
        }
    }

    /**
     * A RENEW moves the lease's expiry, and a RELEASE ends it before it: each cancels a timer task. Cancelled tasks must
     * leave the timer's queue — else each stays, holding its lease, until its original deadline (up to the longest
     * grant), and a peer renewing or requesting and releasing in a loop grows the queue by its rate times that. The
     * same for the handshake watchdog, cancelled by every handshake that finishes in time.
     */
    @Test
    void renewsAndReleasesLeaveNoCancelledTimersBehind() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).failureBackoff(Duration.ZERO));
        int timersBefore = LeaseManager.timerTasks();
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
            int grown = LeaseManager.timerTasks() - timersBefore;
            assertTrue(grown <= 1, "the timer holds " + grown + " more tasks for the one live lease");
            assertEquals(null, session.lostReason());
        }
        int watchdogBefore = RdmaEndpoint.watchdogTasks();
        for (int i = 0; i < 10; i++) {
            var next = listener.accept();
            new RawPeer(peerPd, listener.address()).close();
            next.get(10, TimeUnit.SECONDS).close();
        }
        int grown = RdmaEndpoint.watchdogTasks() - watchdogBefore;
        assertTrue(grown <= 0, "the watchdog holds " + grown + " more tasks after 10 handshakes that finished");
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
            while (refused == null && asked < RdmaSession.MAX_PENDING + 64) {
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
            assertEquals(RdmaSession.MAX_PENDING, asked);
            assertEquals(RdmaSession.MAX_PENDING, session.pendingRequests());
            assertTrue(refused.getMessage().contains("wait for the peer's answer"), refused.getMessage());
            assertEquals(null, session.lostReason(), "refusing a request is back-pressure, not a loss");
        }
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
            assertEquals(1, endpoint.peerAccounts(), "accounts kept: the live session's only");
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
            String why = raw.session().closed().get(10, TimeUnit.SECONDS);
            assertTrue(why.contains(" lost: the peer returned 2147483647 credits"), why);
        }
    }
}
