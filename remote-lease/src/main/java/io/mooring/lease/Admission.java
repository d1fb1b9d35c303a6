package io.mooring.lease;

import io.mooring.lifecycle.Housekeeper;
import io.mooring.lifecycle.MooringException;
import io.mooring.lifecycle.MooringTimeoutException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

/**
 * Who becomes a session of an endpoint, and how. A connection first proves it speaks the protocol — its HELLO ({@link
 * Greeting}) within the first-bytes timeout, then waits for a handshake slot (at most {@code maxHandshakes} at once,
 * {@code maxHandshakesPerPeer} per peer), holding nothing but its socket and a virtual thread meanwhile (at most {@link
 * #waitingPerPeer} such connections per peer, {@link #waitingTotal} in all); then it needs a session slot ({@code
 * maxSessions}, and {@code maxSessionsPerPeer} per peer); a peer barred after a lost session is refused. A refused peer
 * is told why (the VERDICT). A peer is an address prefix ({@link PeerPrefix}); its {@link PeerAccount} counts its
 * limits across its sessions and the wait it serves after a loss.
 */
final class Admission {
    /** Settings of admission (see {@link RdmaEndpoint.Builder}). */
    record Limits(Duration handshakeTimeout, Duration firstBytesTimeout, Duration failureBackoff, int maxSessions,
                  int maxSessionsPerPeer, int maxHandshakes, int maxHandshakesPerPeer, PeerPrefix prefix) {}

    private final RdmaEndpoint endpoint;
    private final Limits limits;
    /**
     * Connections waiting for their HELLO or a handshake slot, of one peer and in all: cheap (a socket and a virtual
     * thread, for at most the first-bytes plus the handshake timeout), but bounded.
     */
    private final int waitingPerPeer;
    private final int waitingTotal;
    private final Semaphore handshakes;
    /** The sockets of the handshakes running: closing the endpoint breaks them off. */
    private final Set<Socket> handshaking = ConcurrentHashMap.newKeySet();
    private final AtomicInteger sessionSlots = new AtomicInteger();
    private final Map<String, PeerAccount> peers = new ConcurrentHashMap<>();
    private final Map<String, Integer> waiting = new ConcurrentHashMap<>();
    private final AtomicInteger waitingCount = new AtomicInteger();
    private volatile boolean closed;

    Admission(RdmaEndpoint endpoint, Limits limits) {
        this.endpoint = endpoint;
        this.limits = limits;
        this.waitingPerPeer = 16 * limits.maxHandshakesPerPeer();
        this.waitingTotal = 16 * limits.maxHandshakes();
        this.handshakes = new Semaphore(limits.maxHandshakes());
    }

    /**
     * Connects to a peer's listener on a virtual thread, from {@code local} (null: any), and runs the handshake; see
     * {@link RdmaEndpoint#connectAsync}.
     */
    CompletableFuture<RdmaSession> connect(InetSocketAddress peer, InetSocketAddress local) {
        var session = new CompletableFuture<RdmaSession>();
        Thread.ofVirtual().name("mooring-connect-" + peer).start(() -> {
            if (!startHandshake()) {
                session.completeExceptionally(new ConnectFailedException("the endpoint is closed, or the connect to "
                        + peer + " was interrupted waiting for a handshake slot", null));
                return;
            }
            Socket socket;
            try {
                socket = SocketChannel.open().socket(); // a channel's: its session's end is watched by a selector
            } catch (IOException e) {
                session.completeExceptionally(new ConnectFailedException("cannot open a socket to connect to " + peer, e));
                return;
            }
            handshaking.add(socket); // close() breaks off a connect too
            PeerAccount account = null;
            boolean slot = false;
            try {
                if (closed) throw new ConnectFailedException("the endpoint is closed", null);
                slot = takeSessionSlot();
                if (!slot) {
                    throw new ConnectFailedException("this endpoint already serves " + limits.maxSessions()
                            + " sessions", null);
                }
                if (local != null) socket.bind(local);
                int timeout = millis(limits.handshakeTimeout());
                socket.connect(peer, timeout);
                socket.setSoTimeout(timeout);
                Greeting.sayHello(socket);
                Greeting.awaitVerdict(socket);
                account = enter(socket.getInetAddress());
                session.complete(setUp(socket, account, peer));
            } catch (IOException | RuntimeException e) {
                SessionLink.closeQuietly(socket);
                if (account != null) account.leave();
                if (slot) sessionSlots.decrementAndGet();
                session.completeExceptionally(e instanceof IOException io ? connectFailed(peer, io) : e);
            } finally {
                handshaking.remove(socket);
                handshakeDone();
            }
        });
        return session;
    }

    /** What a connect's future fails with for an {@link IOException}: a {@link MooringException} as every failure. */
    private MooringException connectFailed(InetSocketAddress peer, IOException e) {
        if (e instanceof SocketTimeoutException) {
            return new MooringTimeoutException("connecting to " + peer + " took longer than the handshake timeout ("
                    + limits.handshakeTimeout() + ")", e);
        }
        return new ConnectFailedException("connecting to " + peer + " failed: " + e.getMessage(), e);
    }

    /**
     * Waits for one of the {@code maxHandshakes} slots; false if interrupted or the endpoint is closed.
     */
    private boolean startHandshake() {
        try {
            handshakes.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
        if (!closed) return true;
        handshakes.release();
        return false;
    }

    private void handshakeDone() {
        handshakes.release();
    }

    /**
     * A listener accepted {@code socket}: unless its peer has too many connections waiting for their first bytes
     * already (refused at once), a virtual thread admits it or refuses it ({@link #admit}) and hands a session that
     * came about to {@code ready}. Never blocks: the listener goes on accepting.
     */
    void accepted(Socket socket, Refusals refusals, Consumer<RdmaSession> ready) {
        String prefix = limits.prefix().of(socket.getInetAddress());
        if (waitingCount.incrementAndGet() > waitingTotal
                || waiting.merge(prefix, 1, Integer::sum) > waitingPerPeer) {
            leaveWaiting(prefix);
            refuse(socket, refusals, SessionRefusedException.Reason.HANDSHAKE_LIMIT, Duration.ZERO,
                    "too many connections of " + prefix + " (at most " + waitingPerPeer + ") or in all (at most "
                            + waitingTotal + ") wait for their first bytes or a handshake slot");
            return;
        }
        Thread.ofVirtual().name("mooring-handshake-" + socket.getRemoteSocketAddress()).start(() -> {
            try {
                RdmaSession session = admit(socket, prefix, refusals);
                if (session != null) ready.accept(session);
            } catch (IOException | RuntimeException e) {
                SessionLink.closeQuietly(socket);
                refusals.refused(socket, "its handshake failed: " + e.getMessage());
            }
        });
    }

    private void leaveWaiting(String prefix) {
        waitingCount.decrementAndGet();
        waiting.computeIfPresent(prefix, (p, n) -> n == 1 ? null : n - 1);
    }

    /** Where the listener hears of connections closed without a session (and counts them). */
    interface Refusals {
        void refused(Socket socket, String why);
    }

    /**
     * Waits for the HELLO (under the first-bytes timeout), checks the peer's bar, waits (up to the handshake timeout)
     * for a handshake slot of the peer's and one of the endpoint's, and sets the session up; null if refused (the peer
     * told why). Until it holds its slots the connection counts as waiting ({@link #accepted}).
     */
    private RdmaSession admit(Socket socket, String prefix, Refusals refusals) throws IOException {
        boolean waiting = true;
        try {
            if (!awaitHello(socket, refusals)) return null;
            long barred = barredForNanos(prefix);
            if (barred > 0) {
                return refuse(socket, refusals, SessionRefusedException.Reason.BARRED, Duration.ofNanos(barred),
                        "a session of " + prefix + " was lost; barred for " + barred / 1_000_000 + " ms more");
            }
            long deadline = System.nanoTime() + limits.handshakeTimeout().toNanos();
            PeerAccount peer = enter(socket.getInetAddress()); // held until freeSlot, or left below
            boolean done = false;
            try {
                if (!peer.startHandshake(limits.maxHandshakesPerPeer(), deadline)) {
                    return refuse(socket, refusals, SessionRefusedException.Reason.HANDSHAKE_LIMIT, Duration.ZERO,
                            prefix + " ran " + limits.maxHandshakesPerPeer() + " handshakes (maxHandshakesPerPeer)"
                                    + " for " + limits.handshakeTimeout());
                }
                try {
                    if (!handshakes.tryAcquire(deadline - System.nanoTime(), TimeUnit.NANOSECONDS)) {
                        return refuse(socket, refusals, SessionRefusedException.Reason.HANDSHAKE_LIMIT, Duration.ZERO,
                                "the endpoint ran " + limits.maxHandshakes() + " handshakes (maxHandshakes) for "
                                        + limits.handshakeTimeout());
                    }
                    leaveWaiting(prefix);
                    waiting = false;
                    try {
                        RdmaSession session = admitted(socket, peer, refusals);
                        done = session != null;
                        return session;
                    } finally {
                        handshakeDone();
                    }
                } finally {
                    peer.handshakeDone();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return refuse(socket, refusals, SessionRefusedException.Reason.CLOSING, Duration.ZERO,
                        "the endpoint is closing");
            } finally {
                if (!done) peer.leave();
            }
        } finally {
            if (waiting) leaveWaiting(prefix);
        }
    }

    /** Reads the HELLO within the first-bytes timeout (a deadline closes the socket then); false if it failed. */
    private boolean awaitHello(Socket socket, Refusals refusals) {
        var firstBytes = new Deadline(socket, limits.firstBytesTimeout());
        handshaking.add(socket); // the endpoint's close breaks the wait off
        if (closed) SessionLink.closeQuietly(socket);
        try {
            Greeting.readHello(socket);
            return true;
        } catch (IOException e) {
            SessionLink.closeQuietly(socket);
            refusals.refused(socket, firstBytes.fired()
                    ? "it sent no HELLO within " + limits.firstBytesTimeout() : "no HELLO: " + e.getMessage());
            return false;
        } finally {
            handshaking.remove(socket);
            firstBytes.disarm();
        }
    }

    /** With a handshake slot: takes a session slot, checks the peer's cap, tells the peer and sets the session up. */
    private RdmaSession admitted(Socket socket, PeerAccount peer, Refusals refusals) throws IOException {
        if (closed) {
            return refuse(socket, refusals, SessionRefusedException.Reason.CLOSING, Duration.ZERO,
                    "the endpoint is closing");
        }
        // Two handshakes of one peer at its limit may both be refused: a cap errs towards refusing.
        if (peer.holdsMoreThan(limits.maxSessionsPerPeer())) {
            return refuse(socket, refusals, SessionRefusedException.Reason.PEER_FULL, Duration.ZERO,
                    peer.name() + " already holds " + limits.maxSessionsPerPeer() + " sessions, the most one peer may"
                            + " (maxSessionsPerPeer)");
        }
        if (!takeSessionSlot()) {
            return refuse(socket, refusals, SessionRefusedException.Reason.ENDPOINT_FULL, Duration.ZERO,
                    "the endpoint already serves " + limits.maxSessions() + " sessions, its limit (maxSessions)");
        }
        boolean done = false;
        try {
            Greeting.admit(socket);
            RdmaSession session = setUp(socket, peer, null);
            done = true;
            return session;
        } finally {
            if (!done) sessionSlots.decrementAndGet();
        }
    }

    /** Refuses {@code socket}'s peer, telling it why, and closes it; null for the caller to return. */
    private static RdmaSession refuse(Socket socket, Refusals refusals, SessionRefusedException.Reason reason,
                                      Duration retryAfter, String why) {
        refusals.refused(socket, why); // counted before the peer learns of it, which may look at once
        Greeting.refuse(socket, reason, retryAfter, why);
        try { // unread bytes (a HELLO) would turn the close into a reset, which may discard the verdict
            var in = socket.getInputStream();
            in.skip(in.available());
        } catch (IOException e) {
            // gone: nothing to drain
        }
        SessionLink.closeQuietly(socket);
        return null;
    }

    /**
     * Runs the bootstrap on {@code socket} (connected to the peer's {@code listener}, or null if accepted here) under
     * the handshake timeout (a watchdog closes the socket when it runs out, so a peer dripping bytes cannot stretch it)
     * and lists the session with the endpoint. The caller holds a session slot and {@code peer}'s account, and gives
     * them back if this throws.
     */
    private RdmaSession setUp(Socket socket, PeerAccount peer, InetSocketAddress listener) throws IOException {
        var deadline = new Deadline(socket, limits.handshakeTimeout());
        handshaking.add(socket);
        if (closed) SessionLink.closeQuietly(socket); // close() may have broken the others off before this one came
        try {
            socket.setSoTimeout(millis(limits.handshakeTimeout()));
            var session = new RdmaSession(endpoint, socket, peer, listener);
            if (!deadline.disarm()) { // it fired just as the handshake finished: too late all the same
                session.close();
                throw tookTooLong(socket, null);
            }
            endpoint.registry().list(session);
            if (closed) session.close();
            return session;
        } catch (IOException e) {
            if (deadline.fired()) throw tookTooLong(socket, e);
            throw e;
        } finally {
            handshaking.remove(socket);
            deadline.disarm();
        }
    }

    /**
     * A handshake's time limit, kept on the {@link Housekeeper}: at the deadline it closes the socket (a short task that
     * never waits on the peer), which breaks off whatever the handshake is reading, unless disarmed first. A handshake
     * that finishes in time disarms it, and its task leaves the queue at once instead of holding the socket until then.
     */
    private static final class Deadline {
        private static final int ARMED = 0, FIRED = 1, DISARMED = 2;
        private final AtomicInteger state = new AtomicInteger(ARMED);
        private final Housekeeper.Task task;

        Deadline(Socket socket, Duration timeout) {
            task = Housekeeper.shared().schedule(() -> {
                if (state.compareAndSet(ARMED, FIRED)) SessionLink.closeQuietly(socket);
            }, timeout);
        }

        /** Keeps it from firing; false if it fired already. Idempotent. */
        boolean disarm() {
            task.cancel();
            state.compareAndSet(ARMED, DISARMED);
            return state.get() != FIRED;
        }

        boolean fired() {
            return state.get() == FIRED;
        }
    }

    private MooringTimeoutException tookTooLong(Socket socket, IOException cause) {
        return new MooringTimeoutException("the handshake with " + socket.getRemoteSocketAddress() + " took longer"
                + " than " + limits.handshakeTimeout(), cause);
    }

    private static int millis(Duration d) {
        return (int) Math.min(Integer.MAX_VALUE, d.toMillis());
    }

    private boolean takeSessionSlot() {
        int n;
        do {
            n = sessionSlots.get();
            if (n >= limits.maxSessions()) return false;
        } while (!sessionSlots.compareAndSet(n, n + 1));
        return true;
    }

    /** A session of {@code peer}'s is gone (or never was): its slot and its hold on the account are free. */
    void freeSlot(PeerAccount peer) {
        sessionSlots.decrementAndGet();
        peer.leave();
    }

    /** Sessions set up or being set up now. */
    int sessionCount() {
        return sessionSlots.get();
    }

    /** The account of the peer {@code address} belongs to, held for a session until {@link #freeSlot}. */
    private PeerAccount enter(InetAddress address) {
        String prefix = limits.prefix().of(address);
        while (true) {
            PeerAccount a = peers.computeIfAbsent(prefix, x -> new PeerAccount(x, limits.failureBackoff().toNanos()));
            if (a.enter()) return a;
            peers.remove(prefix, a); // forgotten meanwhile: a fresh one takes its place
        }
    }

    /** The account of the peer {@code address} belongs to, or null if none is kept. */
    PeerAccount account(InetAddress address) {
        return peers.get(limits.prefix().of(address));
    }

    /** How long the peer {@code prefix} must still wait before a session is accepted (0 or less: none). */
    private long barredForNanos(String prefix) {
        PeerAccount a = peers.get(prefix);
        return a == null ? 0 : a.barredForNanos();
    }

    /**
     * Forgets the accounts of peers that hold nothing and whose last loss is long enough ago (see
     * {@link PeerAccount#forget}): one is kept per peer prefix, and prefixes are plenty.
     */
    void forgetIdlePeers() {
        long now = System.nanoTime();
        peers.values().removeIf(a -> a.forget(now));
    }

    /** Peers an account is kept of (tests). */
    int peerAccounts() {
        return peers.size();
    }

    /** Admits no one any more: breaks off the handshakes in progress and waits until they have freed what they made. */
    void close() {
        closed = true;
        handshaking.forEach(SessionLink::closeQuietly);
        handshakes.acquireUninterruptibly(limits.maxHandshakes());
        handshakes.release(limits.maxHandshakes());
    }
}
