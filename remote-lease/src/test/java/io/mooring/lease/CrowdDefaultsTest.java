package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.verbs.values.Access;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The endpoint's defaults against a hostile crowd (issue 26, point 6): silent connections hold no slot, a peer's
 * failures are forgiven by time only, a dropped connection is a loss, a refused peer is told why, log lines a peer
 * triggers are rate-limited, and a session can be closed from its own end. {@code -Dmooring.lease.verbose=true} prints
 * the honest connect's time behind 64 silent connections (docs/verification.md).
 */
@Timeout(120)
class CrowdDefaultsTest extends EndpointPeers {
    /**
     * Finding 5, slow-loris: 64 silent TCP connections from one address took every handshake slot for the whole
     * handshake timeout, and an honest connect waited 9 s. A connection that has not sent its first bytes holds no slot
     * now, and is closed after the first-bytes timeout (1 s by default).
     */
    @Test
    void silentConnectionsDelayNoHonestPeer() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena));
        RdmaEndpoint peer = peerEndpoint();
        List<Socket> silent = new ArrayList<>();
        try {
            for (int i = 0; i < 64; i++) {
                var s = new Socket();
                s.connect(listener.address(), 10_000);
                silent.add(s);
            }
            Thread.sleep(200); // the listener has taken them all
            var accepted = listener.acceptAsync();
            long start = System.nanoTime();
            RdmaSession honest = peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
            long tookMillis = (System.nanoTime() - start) / 1_000_000;
            accepted.get(10, TimeUnit.SECONDS);
            if (Boolean.getBoolean("mooring.lease.verbose")) {
                System.out.println("an honest connect took " + tookMillis + " ms behind 64 silent connections");
            }
            assertTrue(tookMillis < 2_000, "an honest connect took " + tookMillis + " ms behind 64 silent ones");
            honest.close();
            // Each silent one is closed by the endpoint once its first bytes are late: its read sees the end.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
            for (Socket s : silent) {
                s.setSoTimeout((int) Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
                assertEquals(-1, s.getInputStream().read(), "a silent connection closed by the endpoint");
            }
        } finally {
            for (Socket s : silent) s.close();
        }
    }

    /**
     * Finding 6: a peer's failures are forgiven by time only. A guess loses its session and bars the peer; a clean
     * session after the bar forgives nothing — the next guess bars the peer twice as long — and neither does rotating
     * sessions (several opened and closed cleanly between guesses).
     */
    @Test
    void cleanSessionsBetweenGuessesDoNotResetTheBackoff() throws Exception {
        long first = 1_000;
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).failureBackoff(Duration.ofMillis(first)));
        RdmaEndpoint peer = peerEndpoint();
        guessAndLose(listener, peer);
        Thread.sleep(first + 200); // the first bar is over
        for (int i = 0; i < 3; i++) { // sessions rotated, each closed cleanly
            var accepted = listener.acceptAsync();
            peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS).close();
            accepted.get(10, TimeUnit.SECONDS).closed().get(10, TimeUnit.SECONDS);
        }
        guessAndLose(listener, peer);
        Thread.sleep(first + 200); // past the first backoff, within the doubled one
        var barred = assertThrows(ExecutionException.class,
                () -> peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS),
                "the second guess waits twice the first backoff");
        var refusal = assertInstanceOf(SessionRefusedException.class, barred.getCause());
        assertEquals(SessionRefusedException.Reason.BARRED, refusal.reason(), refusal.getMessage());
        assertTrue(refusal.retryAfter().toMillis() > 0 && refusal.retryAfter().toMillis() < first, refusal.getMessage());
    }

    /** Opens a session, guesses past a lease with the raw QP (a remote access error) and waits until it is lost. */
    private void guessAndLose(RdmaListener listener, RdmaEndpoint peer) throws Exception {
        var accepted = listener.acceptAsync();
        RdmaSession guesser = peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
        RdmaSession ownerSide = accepted.get(10, TimeUnit.SECONDS);
        RemoteSegment lease = guessPastALease(guesser);
        guesser.close();
        lease.close();
        SessionEnd end = ownerSide.closed().get(10, TimeUnit.SECONDS);
        String why = end.reason();
        assertEquals(SessionEnd.How.LOST, end.how(), why);
    }

    /**
     * A TCP end without the goodbye (a crashed or hostile peer) is a loss, not a clean end: the session is "lost" and
     * the peer waits its backoff before the next session.
     */
    @Test
    void anEndWithoutGoodbyeIsALoss() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).failureBackoff(Duration.ofSeconds(5)));
        var accepted = listener.acceptAsync();
        try (RawPeer raw = new RawPeer(peerPd, listener.address())) {
            RdmaSession session = accepted.get(10, TimeUnit.SECONDS);
            raw.hangUp();
            SessionEnd end = session.closed().get(10, TimeUnit.SECONDS);
        String why = end.reason();
            assertEquals(SessionEnd.How.LOST, end.how(), why);
        }
        var barred = assertThrows(ExecutionException.class,
                () -> peerEndpoint().connectAsync(listener.address()).get(10, TimeUnit.SECONDS), "barred after the loss");
        var refusal = assertInstanceOf(SessionRefusedException.class, barred.getCause());
        assertEquals(SessionRefusedException.Reason.BARRED, refusal.reason(), refusal.getMessage());
    }

    /**
     * Finding 4: one address took all 256 slots and an honest peer was told only "EOFException". The per-peer cap is
     * on by default (64), counts a peer by its address prefix — all of 127/8 is one peer, so rotating local
     * addresses buys nothing — and the refused connect names why.
     */
    @Test
    void aPeerWithManyAddressesMeetsOneSessionCap() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena));
        RdmaEndpoint peer = peerEndpoint();
        List<RdmaSession> held = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            held.add(peer.connectAsync(listener.address(), from(i)).get(10, TimeUnit.SECONDS));
        }
        var refused = assertThrows(ExecutionException.class,
                () -> peer.connectAsync(listener.address(), from(64)).get(10, TimeUnit.SECONDS));
        var refusal = assertInstanceOf(SessionRefusedException.class, refused.getCause());
        assertEquals(SessionRefusedException.Reason.PEER_FULL, refusal.reason(), refusal.getMessage());
        assertTrue(refusal.getMessage().contains("already holds 64 sessions"), refusal.getMessage());
        held.forEach(RdmaSession::close);
    }

    /** A local address of its own for the i-th session: 127.0.0.2, 127.0.0.3, ... */
    private static InetSocketAddress from(int i) throws Exception {
        return new InetSocketAddress(InetAddress.getByAddress(new byte[] {127, 0, (byte) (i / 200), (byte) (2 + i % 200)}), 0);
    }

    /** A refused peer is told why: the endpoint is full; its handshake limit; the connect names the reason. */
    @Test
    void aRefusedPeerIsToldWhy() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).maxSessions(1)
                .firstBytesTimeout(Duration.ofSeconds(30)));
        RdmaEndpoint peer = peerEndpoint();
        try (RdmaSession first = peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS)) {
            assertEquals(null, first.lostReason());
            var refused = assertThrows(ExecutionException.class,
                    () -> peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS));
            var refusal = assertInstanceOf(SessionRefusedException.class, refused.getCause());
            assertEquals(SessionRefusedException.Reason.ENDPOINT_FULL, refusal.reason(), refusal.getMessage());
            assertTrue(refusal.getMessage().contains("already serves 1 sessions"), refusal.getMessage());
        }
        // Connections waiting for their first bytes are bounded per peer (16 × maxHandshakesPerPeer): the next is told.
        List<Socket> silent = new ArrayList<>();
        try {
            for (int i = 0; i < 16 * 8; i++) {
                var s = new Socket();
                s.connect(listener.address(), 10_000);
                silent.add(s);
            }
            Thread.sleep(500); // the listener has taken them all
            var refused = assertThrows(ExecutionException.class,
                    () -> peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS));
            var refusal = assertInstanceOf(SessionRefusedException.class, refused.getCause());
            assertEquals(SessionRefusedException.Reason.HANDSHAKE_LIMIT, refusal.reason(), refusal.getMessage());
        } finally {
            for (Socket s : silent) s.close();
        }
    }

    /**
     * Log lines a peer can trigger are rate-limited: 300 connections with a forged first frame leave at most a second's
     * budget of lines per second, not one each.
     */
    @Test
    void forgedConnectionsWriteFewLogLines() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena));
        long start = System.nanoTime();
        for (int i = 0; i < 300; i++) {
            try (var s = new Socket()) {
                s.connect(listener.address(), 10_000);
                s.getOutputStream().write("FORGED!!".getBytes());
                s.getInputStream().read(); // closed by the listener
            }
        }
        long seconds = 1 + (System.nanoTime() - start) / 1_000_000_000L;
        assertTrue(Await.polling(() -> listener.refused() == 300, Duration.ofSeconds(10)), "300 refused");
        long lines = log.entries().stream().filter(e -> e.message().contains("refused")).count();
        assertTrue(lines <= (seconds + 1) * io.mooring.verbs.PeerLog.LINES_PER_SECOND && lines < 100,
                lines + " log lines for 300 forged connections in " + seconds + " s");
    }

    /**
     * Point 8: {@code s.closed().thenRun(s::close)} — the obvious way to clean up when a session ends — threw
     * WrongThreadException when the session was lost on the dispatcher (here: the guesser's own access fails), where
     * close() may not wait; and this side's own close, with that line in place, waited for itself.
     */
    @Test
    void closingOnClosedWorks() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).failureBackoff(Duration.ZERO));
        RdmaEndpoint peer = peerEndpoint();
        var accepted = listener.acceptAsync();
        RdmaSession s = peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
        RdmaSession o = accepted.get(10, TimeUnit.SECONDS);
        var closingPeer = s.closed().thenRun(s::close);
        var closingOwner = o.closed().thenRun(o::close);
        RemoteSegment lease = guessPastALease(s);
        closingPeer.get(10, TimeUnit.SECONDS); // threw WrongThreadException
        closingOwner.get(10, TimeUnit.SECONDS);
        lease.close();
        var next = listener.acceptAsync();
        RdmaSession s2 = peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
        RdmaSession o2 = next.get(10, TimeUnit.SECONDS);
        var closing = o2.closed().thenRun(o2::close);
        o2.closeAsync().get(10, TimeUnit.SECONDS); // this side's close, whose end runs the same line
        closing.get(10, TimeUnit.SECONDS);
        s2.closed().get(10, TimeUnit.SECONDS);
        s2.close();
    }

    /**
     * Finding 10: one table offered to each of a peer's sessions is one table's bytes against the peer's limit, not
     * one per session (before, the 3rd offer of a 512 KiB table was refused at a 1 MiB limit); other bytes still
     * count in full, and the table's bytes are given back when its last lease ends.
     */
    @Test
    void theSameBytesLeasedOverSeveralSessionsCountOnce() throws Exception {
        var limits = LeaseLimits.builder().maxBytes(1 << 20).maxLeases(64)
                .maxDuration(Duration.ofMinutes(1)).maxLifetime(Duration.ofMinutes(10))
                .maxAccess(EnumSet.of(Access.REMOTE_READ)).grace(Duration.ofMillis(50)).build();
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).limits(limits));
        RdmaEndpoint peer = peerEndpoint();
        List<RdmaSession> sessions = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            var accepted = listener.acceptAsync();
            peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
            sessions.add(accepted.get(10, TimeUnit.SECONDS));
        }
        try (Block table = ownerArena.allocateShared(512 << 10, 4096);
             Block other = ownerArena.allocateShared(768 << 10, 4096)) {
            List<Lease> offers = new ArrayList<>();
            for (RdmaSession s : sessions) offers.add(s.offer(table, Duration.ofMinutes(1), EnumSet.of(Access.REMOTE_READ)));
            var refused = assertThrows(LeaseRefusedException.class,
                    () -> sessions.get(0).offer(other, Duration.ofMinutes(1), EnumSet.of(Access.REMOTE_READ)));
            assertTrue(refused.getMessage().contains("524288 leased bytes"), refused.getMessage());
            for (Lease l : offers.subList(1, offers.size())) {
                l.close();
                l.ended().get(10, TimeUnit.SECONDS);
            }
            assertThrows(LeaseRefusedException.class, // one lease of the table is left: its bytes still count
                    () -> sessions.get(0).offer(other, Duration.ofMinutes(1), EnumSet.of(Access.REMOTE_READ)));
            offers.get(0).close();
            offers.get(0).ended().get(10, TimeUnit.SECONDS);
            sessions.get(0).offer(other, Duration.ofMinutes(1), EnumSet.of(Access.REMOTE_READ)).close();
        }
    }
}
