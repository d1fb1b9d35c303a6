package io.mooring.lease;

import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.Housekeeper;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.CompletionDispatcher;
import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.ConnectOptions;
import io.mooring.verbs.IdleDelivery;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.values.Access;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Where an application's sessions live (async-rdma's {@code RdmaListener} and {@code Rdma} builder in one): one
 * protection domain and arena, one completion queue with one dispatcher thread, one shared receive queue for
 * application messages, and the limits per peer — shared by every session, so a session costs two QPs, a few buffers
 * and two virtual threads, not a platform thread.
 * <pre>{@code
 * try (var endpoint = RdmaEndpoint.builder(pd, arena).build();
 *      var listener = endpoint.listen(7471)) {
 *     RdmaSession session = listener.acceptAsync().join();
 *     try (InboundMessage m = session.receive()) { ... }
 * }
 * }</pre>
 * {@link #listen} accepts peers concurrently: a connection holds nothing but its socket until it has sent its first
 * bytes (within {@link Builder#firstBytesTimeout}, 1 s); then each handshake runs on its own virtual thread under the
 * handshake timeout, at most {@link Builder#maxHandshakes} at once and {@link Builder#maxHandshakesPerPeer} per peer,
 * and a failed or abandoned one leaves nothing behind. {@link #connectAsync} returns a future. A peer — every session from
 * one address prefix ({@link Builder#peerPrefix}) — holds at most {@link Builder#maxSessionsPerPeer} sessions (64) and
 * shares one set of {@link LeaseLimits}, and a peer whose session was lost waits a growing time before its next one is
 * accepted. A refused peer's connect fails with a {@link SessionRefusedException} naming why. Who is admitted, and
 * how, is {@link Admission}'s job. A closed endpoint refuses {@code listen} and {@code connectAsync} with a
 * {@link ResourceClosedException}.
 */
public final class RdmaEndpoint implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RdmaEndpoint.class.getName());

    /** How often every session's QPs are checked for ERROR. */
    static final Duration HEALTH_CHECK = Duration.ofMillis(200);

    private final ProtectionDomain pd;
    private final RdmaArena arena;
    private final LeaseLimits limits;
    private final Isolation isolation;
    private final Duration requestTimeout;
    private final Duration revokeTimeout;
    private final ConnectOptions connect;
    private final int maxMessageSize;
    private final int messageWindow;
    private final int maxSessions;
    private final CompletionQueue cq;
    private final CompletionDispatcher dispatcher;
    /** How the blocking forms of every session wait. */
    final Await await;
    private final MessageReceives receives;
    private final Admission admission;
    private final SessionRegistry registry = new SessionRegistry(s -> admission().freeSlot(s.peer()));
    private final List<RdmaListener> listeners = new CopyOnWriteArrayList<>();
    private final Housekeeper.Task health;
    private final ConnectionWatch connectionWatch;
    private volatile boolean closed;

    private RdmaEndpoint(Builder b) {
        this.pd = b.pd;
        this.arena = b.arena;
        this.limits = b.limits;
        this.requestTimeout = b.requestTimeout;
        this.revokeTimeout = b.revokeTimeout;
        this.connect = b.connect;
        this.maxMessageSize = b.maxMessageSize;
        this.messageWindow = b.messageWindow;
        checkArenaRights(b.arena.access(), b.isolation);
        // Without MW_BIND on its chunks (a client that never means to lease) windows go over registrations of their own.
        this.isolation = b.isolation != null ? b.isolation
                : b.arena.access().contains(Access.MW_BIND) ? IsolationProbe.probe(pd) : Isolation.DEDICATED_REGISTRATION;
        // Every QP of every session completes here, so the CQ holds what all of them can have outstanding at once.
        int perSession = SessionLink.CONTROL_QP.maxSendWr() + SessionLink.CONTROL_QP.maxRecvWr()
                + SessionLink.DATA_SENDS + messageWindow;
        var device = pd.context().device().attributes();
        this.maxSessions = Math.min(b.maxSessions, Math.min(device.maxCqe() / perSession,
                device.maxSrqWr() / messageWindow));
        if (maxSessions < 1) {
            throw new IllegalArgumentException("a session needs " + perSession + " completion queue entries and "
                    + messageWindow + " shared receives, the device has at most " + device.maxCqe() + " and "
                    + device.maxSrqWr() + ": lower messageWindow");
        }
        this.cq = pd.context().createCompletionQueue(maxSessions * perSession);
        this.await = new Await(cq);
        MessageReceives made = null;
        try {
            made = new MessageReceives(pd, arena, maxMessageSize, maxSessions * messageWindow);
            this.dispatcher = cq.startDispatcher(b.polling, registry::deliver);
        } catch (RuntimeException e) {
            if (made != null) made.close();
            cq.close();
            throw e;
        }
        this.receives = made;
        this.admission = new Admission(this, new Admission.Limits(b.handshakeTimeout, b.firstBytesTimeout,
                b.failureBackoff, maxSessions, b.maxSessionsPerPeer, b.maxHandshakes, b.maxHandshakesPerPeer,
                b.prefix));
        this.connectionWatch = new ConnectionWatch(String.valueOf(pd.context().device().name()));
        // A data QP takes its receives from the shared queue, so no flushed receive of its own reports that it broke (a
        // remote access error moves it to ERROR without a completion on the owner's side): its state is checked.
        this.health = Housekeeper.shared().scheduleWithFixedDelay(() -> {
            registry.sessions().forEach(RdmaSession::checkQueuePairs);
            admission.forgetIdlePeers();
        }, HEALTH_CHECK);
    }

    /** Checked here, not at the first grant, where a missing right would fail on the NIC and end the session. */
    private static void checkArenaRights(Set<Access> rights, Isolation isolation) {
        if (!rights.contains(Access.LOCAL_WRITE)) {
            throw new IllegalArgumentException("an endpoint's arena needs LOCAL_WRITE (the NIC writes received messages"
                    + " and what peers write), but it registers its chunks with " + rights);
        }
        if (isolation != null && isolation.bindsOnChunks() && !rights.contains(Access.MW_BIND)) {
            throw new IllegalArgumentException("an endpoint's arena needs MW_BIND to lease blocks through memory"
                    + " windows over its chunks (Isolation." + isolation + "), but it registers them with " + rights
                    + ": add MW_BIND to its access, or leave the isolation to the endpoint");
        }
    }

    /** An endpoint on {@code pd} whose messages, control buffers and leased blocks come from {@code arena}. */
    public static Builder builder(ProtectionDomain pd, RdmaArena arena) {
        return new Builder(pd, arena);
    }

    // ---- sessions --------------------------------------------------------------------------------------------

    /** Listens on {@code port} of every local address (0: a free port, see {@link RdmaListener#address()}). */
    public RdmaListener listen(int port) throws IOException {
        return listen(new InetSocketAddress(port));
    }

    /** Listens on {@code address}; sessions come from {@link RdmaListener#acceptAsync()}. */
    public RdmaListener listen(InetSocketAddress address) throws IOException {
        checkOpen();
        var server = ServerSocketChannel.open().socket(); // accepts channels' sockets: see ConnectionWatch
        try {
            server.bind(address);
        } catch (IOException e) {
            server.close();
            throw e;
        }
        var listener = new RdmaListener(this, server);
        listeners.add(listener);
        listener.start();
        return listener;
    }

    /**
     * Connects to a peer's {@link #listen listener}. The future fails with a {@link SessionRefusedException} naming
     * the reason if the peer refuses, a {@link ConnectFailedException} if it cannot be reached or breaks the handshake
     * off, and a {@link io.mooring.lifecycle.MooringTimeoutException} if the handshake takes longer than its timeout.
     */
    public CompletableFuture<RdmaSession> connectAsync(InetSocketAddress peer) {
        checkOpen();
        return admission.connect(peer, null);
    }

    /**
     * {@link #connectAsync(InetSocketAddress)} from a chosen local address (and port; 0: any), e.g. the interface of the network the peer
     * is on, on a host with several.
     */
    public CompletableFuture<RdmaSession> connectAsync(InetSocketAddress peer, InetSocketAddress local) {
        checkOpen();
        return admission.connect(peer, Objects.requireNonNull(local, "local"));
    }

    /** Who becomes a session, and how (the listeners run their handshakes through it). */
    Admission admission() {
        return admission;
    }

    /** The endpoint's sessions and the routing of its completions to them. */
    ConnectionWatch connectionWatch() {
        return connectionWatch;
    }

    SessionRegistry registry() {
        return registry;
    }

    /** Peers the endpoint keeps an account of (tests). */
    int peerAccounts() {
        return admission.peerAccounts();
    }

    /** The sessions open now. */
    public Set<RdmaSession> sessions() {
        return registry.sessions();
    }

    /** The most sessions this endpoint serves at once: {@link Builder#maxSessions}, or fewer if its CQ cannot hold more. */
    public int maxSessions() {
        return maxSessions;
    }

    /** What the peer {@code address} belongs to (its prefix) holds across its sessions: leases, and leased bytes. */
    public PeerUsage usage(InetAddress address) {
        PeerAccount a = admission.account(address);
        return a == null ? new PeerUsage(0, 0) : new PeerUsage(a.leases(), a.leasedBytes());
    }

    /** What one peer holds across its sessions. */
    public record PeerUsage(int leases, long leasedBytes) {}

    // ---- settings --------------------------------------------------------------------------------------------

    public ProtectionDomain pd() {
        return pd;
    }

    public RdmaArena arena() {
        return arena;
    }

    public LeaseLimits limits() {
        return limits;
    }

    /** How leases are confined: as configured, or what {@link IsolationProbe} found for the device. */
    public Isolation isolation() {
        return isolation;
    }

    public Duration requestTimeout() {
        return requestTimeout;
    }

    public Duration revokeTimeout() {
        return revokeTimeout;
    }

    public int maxMessageSize() {
        return maxMessageSize;
    }

    int messageWindow() {
        return messageWindow;
    }

    ConnectOptions connectOptions() {
        return connect;
    }

    CompletionQueue cq() {
        return cq;
    }

    /**
     * A turn for a thread that would otherwise sleep — a Netty event loop's — to deliver this endpoint's completions
     * itself, so that what they complete runs there with no hand-off from the dispatcher's thread ({@link IdleDelivery}).
     */
    public IdleDelivery idleDelivery() {
        return dispatcher.idleDelivery();
    }

    MessageReceives receives() {
        return receives;
    }

    /** Sessions set up or being set up now. */
    int sessionCount() {
        return admission.sessionCount();
    }

    private void checkOpen() {
        if (closed) {
            throw new ResourceClosedException("the endpoint on " + pd.context().device().name() + " is closed");
        }
    }

    /**
     * Stops listening, breaks off the handshakes in progress and waits until they have freed what they made, closes
     * every session (revoking every lease), then the shared receive queue and the completion queue.
     */
    @Override
    public void close() {
        CompletionDispatcher.checkMayWait();
        if (closed) return;
        closed = true;
        health.cancel();
        listeners.forEach(RdmaListener::close);
        // A handshake in progress has QPs on the shared receive queue: break it off and wait until it has freed them.
        admission.close();
        registry.closeAll();
        connectionWatch.close();
        receives.close();
        cq.close();
    }

    void listenerClosed(RdmaListener listener) {
        listeners.remove(listener);
    }

    /** How an {@link RdmaEndpoint} is made; every setting has a default. */
    public static final class Builder {
        private final ProtectionDomain pd;
        private final RdmaArena arena;
        private LeaseLimits limits = LeaseLimits.DEFAULT;
        private Isolation isolation;
        private Duration requestTimeout = Duration.ofSeconds(10);
        private Duration revokeTimeout = Duration.ofSeconds(1);
        private Duration handshakeTimeout = Duration.ofSeconds(10);
        private Duration failureBackoff = Duration.ofMillis(100);
        private ConnectOptions connect = ConnectOptions.DEFAULT;
        private CompletionDispatcher.Mode polling = CompletionDispatcher.Mode.EVENTS;
        private int maxMessageSize = 4096;
        private int messageWindow = 16;
        private int maxSessions = 256;
        private int maxSessionsPerPeer = 64;
        private int maxHandshakes = 64;
        private int maxHandshakesPerPeer = 8;
        private Duration firstBytesTimeout = Duration.ofSeconds(1);
        private PeerPrefix prefix = PeerPrefix.DEFAULT;

        private Builder(ProtectionDomain pd, RdmaArena arena) {
            this.pd = Objects.requireNonNull(pd, "pd");
            this.arena = Objects.requireNonNull(arena, "arena");
        }

        /** What each peer may hold at once, across all its sessions (default {@link LeaseLimits#DEFAULT}). */
        public Builder limits(LeaseLimits limits) {
            this.limits = Objects.requireNonNull(limits, "limits");
            return this;
        }

        /**
         * How leases are confined; by default the device is probed once ({@link Isolation}), or, for an arena without
         * MW_BIND (a client that only reads what it is offered), {@link Isolation#DEDICATED_REGISTRATION}.
         */
        public Builder isolation(Isolation isolation) {
            this.isolation = Objects.requireNonNull(isolation, "isolation");
            return this;
        }

        /** How long a lease REQUEST, RENEW or RELEASE, or a blocking send, waits for the peer (default 10 s). */
        public Builder requestTimeout(Duration timeout) {
            this.requestTimeout = positive(timeout, "requestTimeout");
            return this;
        }

        /**
         * How long a holder asked to stop using a lease (its owner ends it) may take to finish its accesses in flight
         * and release it before its key is revoked by force, which may end that holder's session (default 1 s).
         */
        public Builder revokeTimeout(Duration timeout) {
            this.revokeTimeout = positive(timeout, "revokeTimeout");
            return this;
        }

        /** How long a peer may take to complete the handshake once it has sent its first bytes (default 10 s). */
        public Builder handshakeTimeout(Duration timeout) {
            this.handshakeTimeout = positive(timeout, "handshakeTimeout");
            return this;
        }

        /**
         * How long an accepted connection may take to send its first bytes — the HELLO that proves it speaks the
         * protocol — before it is closed (default 1 s); until then it holds no handshake or session slot.
         */
        public Builder firstBytesTimeout(Duration timeout) {
            this.firstBytesTimeout = positive(timeout, "firstBytesTimeout");
            return this;
        }

        /**
         * How long a peer whose session was lost (an access error, a protocol violation, a broken connection) waits
         * before its next session is accepted; the wait doubles with each further loss, up to 30 s, and is forgiven
         * only by time: 30 s after the last bar ended without a loss (default 100 ms; zero: never wait). A TCP end
         * without the goodbye {@link RdmaSession#close()} sends is a loss.
         */
        public Builder failureBackoff(Duration backoff) {
            if (backoff.isNegative()) throw new IllegalArgumentException("failureBackoff must not be negative, was " + backoff);
            this.failureBackoff = backoff;
            return this;
        }

        /** How the sessions' QPs are connected (default {@link ConnectOptions#DEFAULT}). */
        public Builder connectOptions(ConnectOptions options) {
            this.connect = Objects.requireNonNull(options, "options");
            return this;
        }

        /** Whether the dispatcher sleeps on completion events (default) or spins for the lowest latency. */
        public Builder polling(CompletionDispatcher.Mode mode) {
            this.polling = Objects.requireNonNull(mode, "mode");
            return this;
        }

        /** The largest message a peer may send this endpoint, in bytes (default 4096): each receive buffer's size. */
        public Builder maxMessageSize(int bytes) {
            if (bytes < 1) throw new IllegalArgumentException("maxMessageSize must be positive, was " + bytes);
            this.maxMessageSize = bytes;
            return this;
        }

        /**
         * Messages a peer may send ahead of the application taking them, per session (default 16): the receives each
         * session keeps posted, so the endpoint holds up to this many blocks of {@link #maxMessageSize} per session.
         */
        public Builder messageWindow(int messages) {
            if (messages < 1) throw new IllegalArgumentException("messageWindow must be positive, was " + messages);
            this.messageWindow = messages;
            return this;
        }

        /**
         * Sessions served at once (default 256); more are refused at their handshake. A session its peer ended counts
         * until the application has taken the messages it left, or closed it.
         */
        public Builder maxSessions(int sessions) {
            if (sessions < 1) throw new IllegalArgumentException("maxSessions must be positive, was " + sessions);
            this.maxSessions = sessions;
            return this;
        }

        /**
         * Sessions one peer — one address prefix, see {@link #peerPrefix} — may hold at once (default 64, a quarter of
         * the default {@link #maxSessions}); more are refused at their handshake ({@link
         * SessionRefusedException.Reason#PEER_FULL}). Without it one peer could take every slot.
         */
        public Builder maxSessionsPerPeer(int sessions) {
            if (sessions < 1) throw new IllegalArgumentException("maxSessionsPerPeer must be positive, was " + sessions);
            this.maxSessionsPerPeer = sessions;
            return this;
        }

        /**
         * Handshakes in progress at once, of peers that sent their first bytes (default 64); a peer finding none free
         * waits for one up to the handshake timeout.
         */
        public Builder maxHandshakes(int handshakes) {
            if (handshakes < 1) throw new IllegalArgumentException("maxHandshakes must be positive, was " + handshakes);
            this.maxHandshakes = handshakes;
            return this;
        }

        /**
         * Handshakes one peer may run at once (default 8); more are refused ({@link
         * SessionRefusedException.Reason#HANDSHAKE_LIMIT}). Connections still waiting for their first bytes are bounded
         * too: 16 times this per peer, 16 times {@link #maxHandshakes} in all.
         */
        public Builder maxHandshakesPerPeer(int handshakes) {
            if (handshakes < 1) {
                throw new IllegalArgumentException("maxHandshakesPerPeer must be positive, was " + handshakes);
            }
            this.maxHandshakesPerPeer = handshakes;
            return this;
        }

        /**
         * Which addresses count as one peer, for its session cap, handshakes, lease limits and backoff: those sharing
         * the first {@code ipv4Bits} of an IPv4 address or {@code ipv6Bits} of an IPv6 one (default 32 and 64: an IPv4
         * address, an IPv6 /64 — what one host picks addresses from by itself). All of 127/8 is one peer.
         * Lower them if a peer may hold a whole IPv4 subnet; raise the IPv6 bits if distinct peers share a /64.
         */
        public Builder peerPrefix(int ipv4Bits, int ipv6Bits) {
            this.prefix = new PeerPrefix(ipv4Bits, ipv6Bits);
            return this;
        }

        /**
         * Makes the endpoint: checks the arena's rights (LOCAL_WRITE, and MW_BIND unless leases go through dedicated
         * registrations), probes the device's isolation if none was set, and starts the dispatcher.
         *
         * @throws IllegalArgumentException naming a right the arena lacks
         */
        public RdmaEndpoint build() {
            return new RdmaEndpoint(this);
        }

        private static Duration positive(Duration d, String name) {
            if (d.isNegative() || d.isZero()) throw new IllegalArgumentException(name + " must be positive, was " + d);
            return d;
        }
    }
}
