package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.verbs.Access;
import io.mooring.verbs.Bootstrap;
import io.mooring.verbs.CompletionDispatcher;
import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.QpCapabilities;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.WorkCompletion;
import java.io.IOException;
import java.io.InputStream;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A connection to one peer over which each side can lease its blocks to the other and use the other's. A
 * TCP bootstrap exchanges the QPs' addresses and the protocol version; one RC QP pair then carries both the
 * data (the requester's READ/WRITE/atomics) and the agent's control messages (SEND/RECV, {@link MessageCodec}).
 * The TCP connection stays open as the liveness signal: when it or the QP breaks, every lease granted to the
 * peer is revoked and every {@link RemoteSegment} of the peer's fails fast.
 *
 * <p>The agent serves REQUEST (allocate a block, {@link LeaseManager#grant grant} it, answer GRANT), RENEW,
 * RELEASE (answered with RELEASE_ACK once access is revoked) on its own thread, so that waiting for a bind
 * never stalls the completion dispatcher. Malformed, unknown or forged messages get an ERROR naming the fault;
 * a peer that keeps sending garbage is disconnected.
 */
public final class RdmaSession implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RdmaSession.class.getName());
    private static final int PROTOCOL_VERSION = MessageCodec.VERSION;
    static final int MALFORMED_LIMIT = 16;
    /** The largest alignment a REQUEST may ask for: a page. */
    private static final long MAX_ALIGNMENT = 4096;

    private final Socket socket;
    private final SessionConfig config;
    private final CompletionQueue cq;
    private final QueuePair qp;
    private final ControlChannel channel;
    private final LeaseManager leases;
    private final ExecutorService agent;
    private final Map<Long, CompletableFuture<Message>> pending = new ConcurrentHashMap<>();
    private final Map<Long, RemoteSegment.State> remote = new ConcurrentHashMap<>();
    private final AtomicLong requestIds = new AtomicLong();
    private final AtomicInteger malformed = new AtomicInteger();
    private final AtomicLong leakedSegments = new AtomicLong();
    private volatile String lostReason;
    private final CompletableFuture<String> ended = new CompletableFuture<>();
    private volatile boolean closing;

    /**
     * Sets the session up over a connected {@code socket}, which it then owns. Every step that can fail — a peer
     * that stays silent (bounded by the request timeout), speaks another version, breaks off the bootstrap, or a
     * QP, buffer or probe this side cannot make — throws with everything made so far freed and the socket closed.
     */
    private RdmaSession(Socket socket, SessionConfig config) throws IOException {
        this.socket = socket;
        this.config = config;
        CompletionQueue madeCq = null;
        QueuePair madeQp = null;
        ControlChannel madeChannel = null;
        LeaseManager madeLeases = null;
        ExecutorService madeAgent = null;
        boolean done = false;
        try {
            socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, config.requestTimeout().toMillis()));
            var bootstrap = Bootstrap.of(socket);
            this.cq = madeCq = config.pd().context().createCompletionQueue(1024);
            this.qp = madeQp = config.pd().createQueuePair(cq, cq, QpCapabilities.DEFAULT);
            var peer = bootstrap.exchange(qp.info(config.connect()), ByteBuffer.allocate(4).putInt(0, PROTOCOL_VERSION));
            int peerVersion = peer.data().getInt(0);
            if (peerVersion != PROTOCOL_VERSION) {
                throw new IOException("peer speaks lease protocol " + peerVersion + ", this side " + PROTOCOL_VERSION);
            }
            // Buffers and threads only for a peer that passed the bootstrap.
            this.channel = madeChannel = new ControlChannel(qp, config.arena());
            qp.connect(peer.qp(), config.connect());
            channel.start();
            cq.startDispatcher(CompletionDispatcher.Mode.EVENTS, this::onCompletion);
            this.leases = madeLeases = config.isolation() == null ? LeaseManager.create(qp, config.limits())
                    : LeaseManager.create(qp, config.limits(), config.isolation());
            this.agent = madeAgent = Executors.newSingleThreadExecutor(
                    Thread.ofPlatform().daemon().name("mooring-lease-agent").factory());
            bootstrap.barrier(); // both sides have receives posted before either sends a control message
            socket.setSoTimeout(0); // from now on the connection only signals liveness: watchPeer blocks on it
            Thread.ofPlatform().daemon().name("mooring-session-watch").start(this::watchPeer);
            done = true;
        } finally {
            if (!done) {
                if (madeAgent != null) madeAgent.shutdownNow();
                if (madeLeases != null) madeLeases.close();
                closeQuietly(socket);
                if (madeQp != null) madeQp.close();
                if (madeCq != null) madeCq.close();
                if (madeChannel != null) madeChannel.close();
            }
        }
    }

    /**
     * Accepts one peer on {@code server} and sets the session up; a peer that does not complete the bootstrap within
     * the request timeout is dropped with an exception, having cost nothing that stays.
     */
    public static RdmaSession accept(ServerSocket server, SessionConfig config) throws IOException {
        return new RdmaSession(server.accept(), config);
    }

    /** Connects to a peer waiting in {@link #accept}. */
    public static RdmaSession connect(InetSocketAddress peer, SessionConfig config) throws IOException {
        var s = new Socket();
        try {
            s.connect(peer, 10_000);
        } catch (IOException e) {
            closeQuietly(s);
            throw e;
        }
        return new RdmaSession(s, config);
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            LOG.log(Level.DEBUG, "closing a session socket: " + e.getMessage());
        }
    }

    /** This side's leases to the peer (grant blocks explicitly, inspect or end them). */
    public LeaseManager leases() {
        return leases;
    }

    // ---- requester -------------------------------------------------------------------------------------------

    /**
     * Asks the peer for a lease of {@code size} bytes for {@code duration} with {@code access}.
     *
     * @throws LeaseRefusedException with the peer's reason
     * @throws SessionLostException  if the session is gone
     */
    public RemoteSegment requestRemote(long size, Duration duration, Set<Access> access) {
        return requestRemote(size, 8, duration, access);
    }

    /**
     * Asks the peer for a lease of memory for {@code layout}: its size, at an address aligned as it requires.
     *
     * @throws IllegalArgumentException if the layout is empty or needs an alignment above 4096 (a page)
     * @throws LeaseRefusedException    with the peer's reason
     * @throws SessionLostException     if the session is gone
     */
    public RemoteSegment requestRemote(MemoryLayout layout, Duration duration, Set<Access> access) {
        if (layout.byteSize() <= 0 || layout.byteAlignment() > MAX_ALIGNMENT) {
            throw new IllegalArgumentException("a lease needs a size above 0 and an alignment of at most "
                    + MAX_ALIGNMENT + ", the layout has " + layout.byteSize() + " and " + layout.byteAlignment());
        }
        return requestRemote(layout.byteSize(), Math.max(8, layout.byteAlignment()), duration, access);
    }

    private RemoteSegment requestRemote(long size, long alignment, Duration duration, Set<Access> access) {
        long sent = System.nanoTime();
        Message answer = call(new Message.Request(requestIds.incrementAndGet(), size, alignment, Access.mask(access),
                duration.toNanos()));
        if (answer instanceof Message.Grant g) {
            var state = new RemoteSegment.State(g.leaseId(), localDeadline(sent, g.durationNanos()));
            remote.put(g.leaseId(), state);
            return new RemoteSegment(this, state, g.address(), g.length(), g.rkey(), Set.copyOf(access));
        }
        throw refusal(answer);
    }

    /** A margin before the owner's deadline: our clock started before the owner's did, and a request takes time. */
    private static long localDeadline(long sentNanos, long durationNanos) {
        return sentNanos + durationNanos - Math.min(durationNanos / 10, TimeUnit.MILLISECONDS.toNanos(250));
    }

    void renew(RemoteSegment.State state, Duration duration, long sentNanos) {
        Message answer = call(new Message.Renew(requestIds.incrementAndGet(), state.leaseId, duration.toNanos()));
        if (!(answer instanceof Message.Renewed r)) throw refusal(answer);
        state.deadlineNanos = localDeadline(sentNanos, r.durationNanos());
    }

    /** Sends a control request and waits for its answer. */
    Message call(Message request) {
        checkUsable();
        var answer = new CompletableFuture<Message>();
        pending.put(request.requestId(), answer);
        try {
            channel.send(request);
            return answer.get(config.requestTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw new SessionLostException("session to " + socket.getRemoteSocketAddress() + " failed: " + e.getCause());
        } catch (TimeoutException e) {
            throw new SessionLostException("no answer to " + request.getClass().getSimpleName() + " within "
                    + config.requestTimeout() + " from " + socket.getRemoteSocketAddress());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the peer", e);
        } finally {
            pending.remove(request.requestId());
        }
    }

    private static LeaseRefusedException refusal(Message answer) {
        if (answer instanceof Message.Error e) return new LeaseRefusedException(e.code(), "peer refused: " + e.message());
        return new LeaseRefusedException(ErrorCodes.INVALID_REQUEST, "peer answered " + answer);
    }

    QueuePair qp() {
        return qp;
    }

    /**
     * The session's QP, for traffic outside the lease API. Nothing here checks a lease: that is the point of
     * the owner's revocation — a request through an ended lease's key fails at the owner whatever this side
     * posts.
     */
    public QueuePair queuePair() {
        return qp;
    }

    void checkUsable() {
        String lost = lostReason;
        if (lost != null) throw new SessionLostException(lost);
        if (closing) throw new IllegalStateException("the session is closed");
    }

    /**
     * Releases a lease of the peer's: from {@link RemoteSegment#close()} (waiting for the acknowledgement) or
     * from its Cleaner. A lease the owner already ended (expired, revoked) counts as released.
     */
    void release(long leaseId, boolean wait) {
        remote.remove(leaseId);
        if (lostReason != null || closing) return;
        var release = new Message.Release(requestIds.incrementAndGet(), leaseId);
        if (wait) {
            Message answer = call(release);
            boolean alreadyEnded = answer instanceof Message.Error e && e.code() == ErrorCodes.UNKNOWN_LEASE;
            if (!(answer instanceof Message.ReleaseAck) && !alreadyEnded) throw refusal(answer);
        } else {
            channel.send(release);
        }
    }

    void leaked(long leaseId) {
        leakedSegments.incrementAndGet();
        LOG.log(Level.WARNING, "LEAK: the remote segment of lease " + leaseId + " from "
                + socket.getRemoteSocketAddress() + " became unreachable without close(); released through the Cleaner");
    }

    /** Remote segments dropped without close() so far. */
    public long leakedSegments() {
        return leakedSegments.get();
    }

    // ---- agent -----------------------------------------------------------------------------------------------

    private void onCompletion(WorkCompletion wc) {
        channel.onCompletion(wc, this::toAgent, (why, c) -> lost(why));
    }

    private void toAgent(MemorySegment bytes) {
        try {
            agent.execute(() -> serve(bytes));
        } catch (RejectedExecutionException e) { // closing: the agent has stopped, nothing is served any more
            LOG.log(Level.DEBUG, "a control message arrived after the session closed; dropped");
        }
    }

    private void serve(MemorySegment bytes) {
        Message m;
        try {
            m = MessageCodec.decode(bytes);
        } catch (MalformedMessageException e) {
            LOG.log(Level.WARNING, "malformed control message from " + socket.getRemoteSocketAddress() + ": " + e.getMessage());
            reply(new Message.Error(e.requestId(), ErrorCodes.MALFORMED, e.getMessage()));
            if (malformed.incrementAndGet() > MALFORMED_LIMIT) lost("the peer sent " + MALFORMED_LIMIT + " malformed messages");
            return;
        }
        try {
            switch (m) {
                case Message.Request r -> grant(r);
                case Message.Renew r -> renew(r);
                case Message.Release r -> releaseLease(r);
                case Message.Revoked r -> {
                    RemoteSegment.State s = remote.remove(r.leaseId());
                    if (s != null) s.revoked();
                }
                case Message.Grant g -> answer(g);
                case Message.Renewed r -> answer(r);
                case Message.ReleaseAck a -> answer(a);
                case Message.Error e -> answer(e);
            }
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "serving " + m + " failed", e);
            reply(new Message.Error(m.requestId(), ErrorCodes.INVALID_REQUEST, String.valueOf(e.getMessage())));
        }
    }

    private void grant(Message.Request r) {
        // Refused before anything is allocated: a peer must not make this side map memory it would refuse anyway.
        if (r.size() > config.limits().maxBytes()) {
            reply(new Message.Error(r.requestId(), ErrorCodes.LIMIT_EXCEEDED, "a lease of " + r.size()
                    + " bytes exceeds the per-peer limit of " + config.limits().maxBytes()));
            return;
        }
        if (r.alignment() > MAX_ALIGNMENT) {
            reply(new Message.Error(r.requestId(), ErrorCodes.INVALID_REQUEST, "alignment " + r.alignment()
                    + " exceeds " + MAX_ALIGNMENT));
            return;
        }
        Block block;
        try {
            block = config.arena().allocateShared(r.size(), r.alignment());
        } catch (IllegalArgumentException | VerbsException | OutOfMemoryError e) { // e.g. the memlock limit
            reply(new Message.Error(r.requestId(), ErrorCodes.OUT_OF_MEMORY, "cannot allocate " + r.size() + " bytes: "
                    + e.getMessage()));
            return;
        }
        try {
            Lease lease = leases.grant(block, Duration.ofNanos(r.durationNanos()), Access.of(r.access()));
            lease.ended().thenAccept(reason -> {
                if (reason == EndReason.EXPIRED || reason == EndReason.OWNER_CLOSED) {
                    reply(new Message.Revoked(requestIds.incrementAndGet(), lease.id(), reason.ordinal()));
                }
            });
            reply(new Message.Grant(r.requestId(), lease.id(), lease.address(), lease.length(), lease.rkey(), r.durationNanos()));
        } catch (LeaseRefusedException e) {
            block.close();
            reply(new Message.Error(r.requestId(), e.code(), e.getMessage()));
        }
    }

    private void renew(Message.Renew r) {
        Lease lease = leases.lease(r.leaseId());
        if (lease == null) {
            reply(new Message.Error(r.requestId(), ErrorCodes.UNKNOWN_LEASE, "no active lease " + r.leaseId() + " of yours"));
            return;
        }
        try {
            leases.renew(lease, Duration.ofNanos(r.durationNanos()));
            reply(new Message.Renewed(r.requestId(), r.leaseId(), r.durationNanos()));
        } catch (LeaseRefusedException e) {
            reply(new Message.Error(r.requestId(), e.code(), e.getMessage()));
        }
    }

    private void releaseLease(Message.Release r) {
        Lease lease = leases.lease(r.leaseId());
        if (lease == null) { // never granted over this session, or already ended: nothing to revoke
            reply(new Message.Error(r.requestId(), ErrorCodes.UNKNOWN_LEASE, "no active lease " + r.leaseId() + " of yours"));
            return;
        }
        leases.end(lease, EndReason.RELEASED)
                .whenComplete((v, e) -> reply(new Message.ReleaseAck(r.requestId(), r.leaseId())));
    }

    private void answer(Message m) {
        CompletableFuture<Message> waiting = pending.get(m.requestId());
        if (waiting != null) waiting.complete(m);
        else LOG.log(Level.DEBUG, "answer to no pending request: " + m);
    }

    private void reply(Message m) {
        if (lostReason != null) return;
        channel.send(m).exceptionally(e -> {
            lost("a control SEND failed: " + e);
            return null;
        });
    }

    // ---- failure and closing ---------------------------------------------------------------------------------

    /** Blocks on the bootstrap connection: its end (the peer process died or closed) ends the session. */
    private void watchPeer() {
        try (InputStream in = socket.getInputStream()) {
            while (in.read() >= 0) {
                // the peer sends nothing more after the bootstrap; a read returns only at end of stream
            }
            if (!closing) lost("the peer closed the session", Level.INFO);
        } catch (IOException e) {
            if (!closing) lost("the session's TCP connection broke: " + e.getMessage(), Level.WARNING);
        }
    }

    private void lost(String reason) {
        lost(reason, Level.WARNING);
    }

    /**
     * Ends the session from the peer's side; a peer closing it is ordinary (INFO: the session "ended"), anything
     * else a failure (WARNING: it was "lost").
     */
    private synchronized void lost(String reason, Level level) {
        if (lostReason != null || closing) return;
        lostReason = "session to " + socket.getRemoteSocketAddress() + (level == Level.INFO ? " ended: " : " lost: ")
                + reason;
        ended.complete(lostReason);
        LOG.log(level, lostReason + "; revoking every lease granted to the peer");
        pending.values().forEach(f -> f.completeExceptionally(new SessionLostException(lostReason)));
        remote.values().forEach(RemoteSegment.State::revoked);
        remote.clear();
        qp.moveToError(); // no invalidation can complete on it any more; the manager deallocates windows instead
        agent.execute(() -> leases.endAll(EndReason.SESSION_LOST));
    }

    /** Why the session ended on the peer's side (it closed it, or the session broke), or null while it works. */
    public String lostReason() {
        return lostReason;
    }

    /**
     * Completes, never exceptionally, when the session ends, with why: closed by this side, closed by the peer, or
     * what broke it — so an application learns of a lost peer without polling.
     */
    public CompletableFuture<String> closed() {
        return ended.copy();
    }

    /** Revokes every lease granted to the peer, then tears the connection down. */
    @Override
    public void close() {
        synchronized (this) {
            if (closing) return;
            closing = true;
        }
        ended.complete("session to " + socket.getRemoteSocketAddress() + " closed by this side");
        leases.close();
        agent.shutdown();
        try {
            agent.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        closeQuietly(socket);
        qp.close();
        cq.close();
        channel.close();
    }
}
