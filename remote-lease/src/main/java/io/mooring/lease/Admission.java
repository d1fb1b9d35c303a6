package io.mooring.lease;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Who becomes a session of an endpoint, and how: the handshakes — at most {@code maxHandshakes} at once, each under the
 * handshake timeout, broken off by the endpoint's close — the session slots ({@code maxSessions}, and
 * {@code maxSessionsPerPeer} per address), and the account of every peer (its limits across its sessions, and the wait
 * a peer whose session was lost serves before its next one).
 */
final class Admission {
    /**
     * Closes handshakes that run past their timeout and checks the sessions' QPs; its tasks close sockets and read
     * QP states, so it never waits on a peer. A handshake that finishes in time cancels its task, which leaves the
     * queue at once instead of holding the socket for the rest of the timeout.
     */
    static final ScheduledThreadPoolExecutor WATCHDOG = new ScheduledThreadPoolExecutor(1,
            Thread.ofPlatform().daemon().name("mooring-handshake-watchdog").factory());

    static {
        WATCHDOG.setRemoveOnCancelPolicy(true);
    }

    private final RdmaEndpoint endpoint;
    private final Duration handshakeTimeout;
    private final Duration failureBackoff;
    private final int maxSessions;
    private final int maxSessionsPerPeer;
    private final int maxHandshakes;
    private final Semaphore handshakes;
    /** The sockets of the handshakes running: closing the endpoint breaks them off. */
    private final Set<Socket> handshaking = ConcurrentHashMap.newKeySet();
    private final AtomicInteger sessionSlots = new AtomicInteger();
    private final Map<InetAddress, PeerAccount> peers = new ConcurrentHashMap<>();
    private volatile boolean closed;

    Admission(RdmaEndpoint endpoint, Duration handshakeTimeout, Duration failureBackoff, int maxSessions,
              int maxSessionsPerPeer, int maxHandshakes) {
        this.endpoint = endpoint;
        this.handshakeTimeout = handshakeTimeout;
        this.failureBackoff = failureBackoff;
        this.maxSessions = maxSessions;
        this.maxSessionsPerPeer = maxSessionsPerPeer;
        this.maxHandshakes = maxHandshakes;
        this.handshakes = new Semaphore(maxHandshakes);
    }

    /** Connects to a peer's listener on a virtual thread and runs the handshake; see {@link RdmaEndpoint#connect}. */
    CompletableFuture<RdmaSession> connect(InetSocketAddress peer) {
        var session = new CompletableFuture<RdmaSession>();
        Thread.ofVirtual().name("mooring-connect-" + peer).start(() -> {
            if (!startHandshake()) {
                session.completeExceptionally(new InterruptedIOException("the endpoint is closed, or the connect was"
                        + " interrupted waiting for a handshake slot"));
                return;
            }
            var socket = new Socket();
            handshaking.add(socket); // close() breaks off a connect too
            try {
                if (closed) throw new IOException("the endpoint is closed");
                socket.connect(peer, (int) Math.min(Integer.MAX_VALUE, handshakeTimeout.toMillis()));
                session.complete(handshake(socket, peer));
            } catch (IOException | RuntimeException e) {
                SessionLink.closeQuietly(socket);
                session.completeExceptionally(e);
            } finally {
                handshaking.remove(socket);
                handshakeDone();
            }
        });
        return session;
    }

    /**
     * Waits for one of the {@code maxHandshakes} slots; false if interrupted (the listener is closing) or the endpoint
     * is closed.
     */
    boolean startHandshake() {
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

    void handshakeDone() {
        handshakes.release();
    }

    /**
     * Runs the bootstrap on {@code socket} (connected to the peer's {@code listener}, or null if accepted here) under
     * the handshake timeout (a watchdog closes the socket when it runs out, so a peer dripping bytes cannot stretch it)
     * and lists the session with the endpoint.
     */
    RdmaSession handshake(Socket socket, InetSocketAddress listener) throws IOException {
        if (!takeSessionSlot()) {
            SessionLink.closeQuietly(socket);
            throw new IOException("the endpoint already serves " + maxSessions + " sessions, its limit");
        }
        PeerAccount peer = enter(socket.getInetAddress()); // left by freeSlot, or below if no session is listed
        boolean done = false;
        ScheduledFuture<?> watchdog = WATCHDOG.schedule(() -> SessionLink.closeQuietly(socket),
                handshakeTimeout.toNanos(), TimeUnit.NANOSECONDS);
        handshaking.add(socket);
        if (closed) SessionLink.closeQuietly(socket); // close() may have broken the others off before this one came
        try {
            // Two handshakes of one peer at its limit may both be refused: a cap errs towards refusing.
            if (peer.holdsMoreThan(maxSessionsPerPeer)) {
                SessionLink.closeQuietly(socket);
                throw new IOException(socket.getInetAddress().getHostAddress() + " already holds " + maxSessionsPerPeer
                        + " sessions, the most one peer may (RdmaEndpoint.Builder.maxSessionsPerPeer)");
            }
            socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, handshakeTimeout.toMillis()));
            var session = new RdmaSession(endpoint, socket, peer, listener);
            if (!watchdog.cancel(false)) { // the watchdog fired just as the handshake finished: too late all the same
                session.close();
                throw new IOException("the handshake with " + socket.getRemoteSocketAddress() + " took longer than "
                        + handshakeTimeout);
            }
            endpoint.list(session);
            if (closed) session.close();
            done = true;
            return session;
        } catch (IOException e) {
            if (watchdog.isDone() && !watchdog.isCancelled()) {
                throw new IOException("the handshake with " + socket.getRemoteSocketAddress() + " took longer than "
                        + handshakeTimeout, e);
            }
            throw e;
        } finally {
            handshaking.remove(socket);
            watchdog.cancel(false);
            if (!done) freeSlot(peer);
        }
    }

    private boolean takeSessionSlot() {
        int n;
        do {
            n = sessionSlots.get();
            if (n >= maxSessions) return false;
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

    /** The account of the peer at {@code address}, held for a session until {@link #freeSlot}. */
    private PeerAccount enter(InetAddress address) {
        while (true) {
            PeerAccount a = peers.computeIfAbsent(address, x -> new PeerAccount(x, failureBackoff.toNanos()));
            if (a.enter()) return a;
            peers.remove(address, a); // forgotten meanwhile: a fresh one takes its place
        }
    }

    /** The account of the peer at {@code address}, or null if none is kept. */
    PeerAccount account(InetAddress address) {
        return peers.get(address);
    }

    /** How long the peer at {@code address} must still wait before a session is accepted (0 or less: none). */
    long barredForNanos(InetAddress address) {
        PeerAccount a = peers.get(address);
        return a == null ? 0 : a.barredForNanos();
    }

    /**
     * Forgets the accounts of peers that hold nothing and whose last loss is long enough ago (see
     * {@link PeerAccount#forget}): one is kept per address, and addresses (an IPv6 prefix) are plenty.
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
        handshakes.acquireUninterruptibly(maxHandshakes);
        handshakes.release(maxHandshakes);
    }
}
