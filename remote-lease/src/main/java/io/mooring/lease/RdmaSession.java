package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.lifecycle.Resource;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.Bootstrap;
import io.mooring.verbs.CompletionDispatcher;
import io.mooring.verbs.QpInfo;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.Opcode;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.QpState;
import io.mooring.verbs.values.WcOpcode;
import java.io.IOException;
import java.io.InputStream;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemoryLayout;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A connection to one peer, made by an {@link RdmaEndpoint}: each side can send the other messages, lease its
 * blocks to the other and use the other's. Two RC QP pairs: the <em>control</em> QP carries the lease agent's
 * messages ({@link MessageCodec}); the <em>data</em> QP carries the application's messages (flow-controlled by
 * credits, {@link MessageFlow}), the requester's READ/WRITE/atomics, and the binds of the windows that expose this
 * side's leases — a type 2 window is reached only through the QP it was bound through, the peer's data QP's partner.
 * The bootstrap's TCP connection stays open as the liveness signal: when it or a QP breaks, every lease granted to
 * the peer is revoked and every {@link RemoteSegment} of the peer's fails fast.
 *
 * <p>A session has no thread of its own but two virtual threads: its agent, which serves REQUEST, RENEW and RELEASE in
 * order (waiting for a bind blocks nobody else), and the watcher of the TCP connection. Completions come from the
 * endpoint's dispatcher. Malformed, unknown or forged messages get an ERROR naming the fault; a peer that keeps
 * sending garbage is disconnected.
 */
public final class RdmaSession implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RdmaSession.class.getName());
    private static final int PROTOCOL_VERSION = MessageCodec.VERSION;
    static final int MALFORMED_LIMIT = 16;
    /** The largest alignment a REQUEST may ask for: a page. */
    private static final long MAX_ALIGNMENT = 4096;
    /** Sends and receives of the control QP; the agent answers each received message with at most one. */
    static final QpCapabilities CONTROL_QP = new QpCapabilities(ControlChannel.SENDS, ControlChannel.RECEIVES, 1, 1, 0);
    /** Outstanding requests of the data QP's send queue (messages, the requester's operations, binds). */
    static final int DATA_SENDS = 256;
    /** RNR retries before a peer that posts no receives is declared lost (7 would retry forever). */
    static final int RNR_RETRY = 6;
    /**
     * How long a peer waits before it sends again into our empty receive queue: code 26, 81.92 ms. With {@link #RNR_RETRY}
     * retries a stall of about half a second (a GC pause, a starved core, a slow callback on the dispatcher) costs an
     * honest session nothing; the verbs default (0.64 ms) ended it after 4 ms.
     */
    static final int MIN_RNR_TIMER = 26;
    /**
     * This side's control requests (REQUEST, RENEW, RELEASE) waiting for the peer's answer, at most: a peer that takes
     * them and never answers would otherwise hold each for the request timeout, however many the application makes.
     */
    static final int MAX_PENDING = 1024;
    /** Offers received and not yet taken by {@link #receiveOfferAsync()}, at most. */
    static final int OFFER_BACKLOG = 64;
    /**
     * How long a closing or lost session waits for its QPs' requests to complete before destroying them, and how long
     * a peer's goodbye waits for the messages it counts.
     */
    private static final Duration FLUSH_WAIT = Duration.ofSeconds(5);
    /** The goodbye a closing side writes on the bootstrap connection: the messages and notices it posted (a long). */
    private static final int GOODBYE_BYTES = Long.BYTES;
    /** Bootstrap record: protocol version, the data QP's address, the message window and size this side takes. */
    private static final int RECORD_BYTES = 4 + QpInfo.BYTES + 4 + 4;

    private final RdmaEndpoint endpoint;
    private final Socket socket;
    private final SocketAddress peerAddress;
    private final InetSocketAddress peerListener; // where this side connected to; null if it accepted
    private final PeerAccount peer;
    /** The peer's lost sessions when this one was set up: only a clean end with none since forgives them. */
    private final long peerFailuresAtStart;
    private final QueuePair controlQp;
    private final QueuePair dataQp;
    /** The session in the lifecycle graph, under its QPs: the parent of the remote segments the peer leased it. */
    private final Resource resource;
    private final ControlChannel channel;
    private final MessageFlow messages;
    private final LeaseManager leases;
    private final SessionAgent agent;
    private final int peerMessageSize;
    private final Map<Long, CompletableFuture<Message>> pending = new ConcurrentHashMap<>();
    private final Map<Long, RemoteSegment.State> remote = new ConcurrentHashMap<>();
    private final Handoff<RemoteSegment> offers;
    private final AtomicLong requestIds = new AtomicLong();
    private final AtomicInteger malformed = new AtomicInteger();
    private final AtomicLong leakedSegments = new AtomicLong();
    private final AtomicLong offersReleased = new AtomicLong();
    private volatile String lostReason;
    private final CompletableFuture<String> ended = new CompletableFuture<>();
    private volatile boolean closing;
    private final AtomicBoolean tearingDown = new AtomicBoolean();
    private final CompletableFuture<Void> tornDown = new CompletableFuture<>();
    /** Completes when the first {@link #close()} returns: a concurrent one waits for it. */
    private final CompletableFuture<Void> closedHere = new CompletableFuture<>();

    /**
     * Sets the session up over a connected {@code socket}, which it then owns. Every step that can fail — a peer
     * that stays silent (bounded by the endpoint's handshake timeout), speaks another version, breaks off the
     * bootstrap, or a QP or buffer this side cannot make — throws with everything made so far freed and the socket
     * closed.
     */
    RdmaSession(RdmaEndpoint endpoint, Socket socket, PeerAccount peer, InetSocketAddress peerListener)
            throws IOException {
        this.endpoint = endpoint;
        this.socket = socket;
        this.peerListener = peerListener;
        this.peerAddress = socket.getRemoteSocketAddress();
        this.peer = peer;
        this.peerFailuresAtStart = peer.failures();
        this.offers = new Handoff<>(OFFER_BACKLOG, "an offer", endpoint.cq()::newFuture, () -> { });
        QueuePair madeControl = null;
        QueuePair madeData = null;
        Resource madeResource = null;
        ControlChannel madeChannel = null;
        MessageFlow madeMessages = null;
        LeaseManager madeLeases = null;
        SessionAgent madeAgent = null;
        boolean done = false;
        try {
            var bootstrap = Bootstrap.of(socket);
            var pd = endpoint.pd();
            this.controlQp = madeControl = pd.createQueuePair(endpoint.cq(), endpoint.cq(), CONTROL_QP);
            this.dataQp = madeData = pd.createQueuePair(endpoint.cq(), endpoint.cq(),
                    new QpCapabilities(DATA_SENDS, 1, 1, 1, 0), endpoint.receives().queue());
            this.resource = madeResource = pd.resource().graph().create("session", "to " + peerAddress, () -> {},
                    controlQp.resource(), dataQp.resource());
            var record = ByteBuffer.allocate(RECORD_BYTES).putInt(PROTOCOL_VERSION);
            dataQp.info(endpoint.connectOptions()).writeTo(record);
            record.putInt(endpoint.messageWindow()).putInt(endpoint.maxMessageSize()).flip();
            var answer = bootstrap.exchange(controlQp.info(endpoint.connectOptions()), record, RECORD_BYTES);
            ByteBuffer peerRecord = answer.data();
            int peerVersion = peerRecord.getInt();
            if (peerVersion != PROTOCOL_VERSION) {
                throw new IOException("peer speaks lease protocol " + peerVersion + ", this side " + PROTOCOL_VERSION);
            }
            QpInfo peerData = QpInfo.readFrom(peerRecord);
            int peerWindow = peerRecord.getInt();
            this.peerMessageSize = peerRecord.getInt();
            if (peerWindow <= 0 || peerMessageSize <= 0) {
                throw new IOException("peer offers a message window of " + peerWindow + " and a message size of "
                        + peerMessageSize + "; both must be positive");
            }
            // Buffers and threads only for a peer that passed the bootstrap. Its messages come from the endpoint's
            // shared receive queue, which holds a window for every session.
            endpoint.receives().grow(endpoint.sessionCount() * endpoint.messageWindow());
            this.channel = madeChannel = new ControlChannel(controlQp, endpoint.arena());
            this.messages = madeMessages = new MessageFlow(this, endpoint.messageWindow(), peerWindow);
            this.leases = madeLeases = new LeaseManager(dataQp, endpoint.limits(), endpoint.isolation(), peer);
            leases.onRevocationNotice(lease -> tellEnd(lease, EndReason.OWNER_CLOSED));
            this.agent = madeAgent = new SessionAgent("mooring-agent-" + peerAddress);
            endpoint.route(this);
            var options = endpoint.connectOptions().toBuilder().rnrRetry(RNR_RETRY).minRnrTimer(MIN_RNR_TIMER).build();
            controlQp.connect(answer.qp(), options);
            dataQp.connect(peerData, options);
            channel.start();
            agent.start();
            bootstrap.barrier(); // both sides have receives posted before either sends anything
            socket.setSoTimeout(0); // from now on the connection only signals liveness: watchPeer blocks on it
            Thread.ofVirtual().name("mooring-session-watch-" + peerAddress).start(this::watchPeer);
            done = true;
        } finally {
            if (!done) {
                closing = true;
                endpoint.unroute(madeControl, madeData);
                if (madeAgent != null) madeAgent.stop();
                if (madeLeases != null) madeLeases.close();
                closeQuietly(socket);
                if (madeResource != null) madeResource.closeTree();
                if (madeControl != null) madeControl.close();
                if (madeData != null) madeData.close();
                if (madeChannel != null) madeChannel.close();
                if (madeMessages != null) madeMessages.end("the session was not set up");
            }
        }
    }

    static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            LOG.log(Level.DEBUG, "closing a session socket: " + e.getMessage());
        }
    }

    /** The peer's address (its end of the bootstrap connection). */
    public SocketAddress peerAddress() {
        return peerAddress;
    }

    /**
     * Another session to the same peer, on the same endpoint — so the same protection domain, arena and registered
     * memory — with queue pairs of its own (async-rdma's {@code new_connect}): for traffic that must not wait behind
     * this session's. Only the side that connected can open one; it counts against the same per-peer limits.
     *
     * @throws IllegalStateException if this side accepted the session (the peer connects again instead)
     */
    public CompletableFuture<RdmaSession> connectAgain() {
        if (peerListener == null) {
            throw new IllegalStateException("this side accepted the session to " + peerAddress + ": the peer, which"
                    + " connected, opens more sessions");
        }
        return endpoint.connect(peerListener);
    }

    /** The endpoint this session belongs to. */
    public RdmaEndpoint endpoint() {
        return endpoint;
    }

    /** This side's leases to the peer (grant blocks explicitly, inspect or end them). */
    public LeaseManager leases() {
        return leases;
    }

    // ---- messages --------------------------------------------------------------------------------------------

    /** The largest message the peer takes: its endpoint's maximum message size. */
    public int peerMaxMessageSize() {
        return peerMessageSize;
    }

    /**
     * Sends the first {@code length} bytes of {@code message} to the peer, where {@link #receive()} delivers them. The
     * block stays the caller's, but must not change until the returned future completes. Waits for a credit if the
     * peer has taken none of the messages it was sent lately (flow control), never for its CPU.
     *
     * @throws IllegalArgumentException if {@code length} exceeds the block or {@link #peerMaxMessageSize()}
     * @throws FlowControlException     if {@value MessageFlow#MAX_WAITING} sends already wait for credit
     * @throws SessionLostException     if the session has ended
     */
    public CompletableFuture<WorkCompletion> sendAsync(Block message, int length) {
        return sendAsync(message, length, false, 0);
    }

    /** {@link #sendAsync(Block, int)} with a 32-bit immediate value the receiver gets beside the bytes. */
    public CompletableFuture<WorkCompletion> sendWithImmAsync(Block message, int length, int immediate) {
        return sendAsync(message, length, true, immediate);
    }

    /**
     * Sends the whole block and waits until it is sent (see {@link #sendAsync}). It waits at most the request timeout
     * for a credit, then throws {@link FlowControlException} and the message is not sent; once posted, it is waited for.
     */
    public void send(Block message) {
        awaitSent(sendAsync(message, messageLength(message)));
    }

    /** {@link #send(Block)} with an immediate value. */
    public void sendWithImm(Block message, int immediate) {
        awaitSent(sendWithImmAsync(message, messageLength(message), immediate));
    }

    private static int messageLength(Block message) {
        return (int) Math.min(Integer.MAX_VALUE, message.size());
    }

    private CompletableFuture<WorkCompletion> sendAsync(Block message, int length, boolean withImmediate, int immediate) {
        checkUsable();
        if (length < 0 || length > message.size() || length > peerMessageSize) {
            throw new IllegalArgumentException("a message of " + length + " bytes from " + message + " does not fit: the"
                    + " peer takes at most " + peerMessageSize + " bytes per message");
        }
        return messages.send(() -> {
            var wr = WorkRequest.send(message.region(), message.regionOffset(), length);
            if (withImmediate) wr.opcode(Opcode.SEND_WITH_IMM).immediate(immediate);
            return dataQp.postAsync(wr);
        });
    }

    /**
     * The next message from the peer, when it arrives; the caller owns it and closes it when done. Messages arrive in
     * the order they were sent. After the peer closed the session, what it sent before is still received, then the
     * end; after a loss or this side's close, nothing more is.
     *
     * @throws FlowControlException if {@value MessageFlow#MAX_WAITING} receives already wait
     * @throws SessionLostException (the future's failure) once the session has ended and nothing is left to receive
     */
    public CompletableFuture<InboundMessage> receiveAsync() {
        return messages.receive();
    }

    /** Waits for the next message, at most {@code timeout}. */
    public InboundMessage receive(Duration timeout) throws TimeoutException {
        return endpoint.await.within(receiveAsync(), timeout);
    }

    /**
     * Waits for the next message.
     *
     * @throws SessionLostException once the session has ended (the peer left, or this side closed it) and nothing is
     *                              left to receive
     */
    public InboundMessage receive() {
        return endpoint.await.join(messages.receive());
    }

    /**
     * The immediate value of the next RDMA WRITE with immediate the peer made into a segment this side leased it
     * ({@link RemoteSegment#writeWithImmAsync} on its side): the data is in place when this completes.
     */
    public CompletableFuture<Integer> receiveWriteImmAsync() {
        return messages.receiveWriteImm();
    }

    /** Waits for the next WRITE with immediate, at most {@code timeout}. */
    public int receiveWriteImm(Duration timeout) throws TimeoutException {
        return endpoint.await.within(receiveWriteImmAsync(), timeout);
    }

    /** Posts a WRITE with immediate for {@link RemoteSegment}, spending a credit as a message does. */
    CompletableFuture<WorkCompletion> writeWithImm(WorkRequest write) {
        checkUsable();
        return messages.send(() -> dataQp.postAsync(write));
    }

    /** The peer sent past the {@code window} credits it was given: it breaks the protocol and loses the session. */
    void pastCredits(int window) {
        lost("the peer sent past its " + window + " credits");
    }

    /** The peer returned credits for messages this side never sent: it breaks the protocol and loses the session. */
    void pastWindow(int credits, int window) {
        lost("the peer returned " + credits + " credits, more than this side's messages it has not credited yet (its"
                + " window is " + window + ")");
    }

    /** The application took {@code n} messages: tell the peer it may send that many more. */
    void grantCredits(int n) {
        if (lostReason == null && !closing) reply(new Message.Credit(requestIds.incrementAndGet(), n));
    }

    // ---- offers ----------------------------------------------------------------------------------------------

    /**
     * Leases {@code block} to the peer without being asked (async-rdma's {@code send_local_mr}): the peer's
     * {@link #receiveOfferAsync()} gets it as a {@link RemoteSegment}. The lease pins the block, which stays the caller's —
     * a stored value can be offered to many peers at once — and closing the block ends the lease.
     *
     * @throws LeaseRefusedException naming the limit or argument at fault
     * @throws SessionLostException  if the session has ended
     */
    public Lease offer(Block block, Duration duration, Set<Access> access) {
        return offer(block, 0, block.size(), duration, access);
    }

    /** Offers {@code [offset, offset + length)} of {@code block}, as {@link #offer(Block, Duration, Set)} does. */
    public Lease offer(Block block, long offset, long length, Duration duration, Set<Access> access) {
        return endpoint.await.join(offerAsync(block, offset, length, duration, access));
    }

    /**
     * {@link #offer(Block, long, long, Duration, Set)} without waiting: the future completes once the key is bound and
     * the offer sent, or fails with what the blocking form throws. It never throws itself.
     */
    public CompletableFuture<Lease> offerAsync(Block block, long offset, long length, Duration duration,
                                               Set<Access> access) {
        try {
            checkUsable();
        } catch (SessionLostException e) {
            return CompletableFuture.failedFuture(e);
        }
        return leases.grantAsync(block, offset, length, duration, access).thenApply(lease -> {
            announceRevocation(lease);
            reply(new Message.Offer(requestIds.incrementAndGet(), lease.id(), lease.address(), lease.length(),
                    lease.rkey(), Access.mask(access), duration.toNanos()));
            announced(lease);
            return lease;
        });
    }

    /**
     * The next lease the peer offers, as a segment this side may use until the lease ends (async-rdma's
     * {@code receive_remote_mr}). Offers nobody takes wait in a queue of {@value #OFFER_BACKLOG}; past it they are
     * released at once, by a RELEASE that waits for no answer (so a peer offering faster than the application takes
     * costs nothing that stays).
     */
    public CompletableFuture<RemoteSegment> receiveOfferAsync() {
        return offers.take();
    }

    /** Waits for the next offer, at most {@code timeout}. */
    public RemoteSegment receiveOffer(Duration timeout) throws TimeoutException {
        return endpoint.await.within(receiveOfferAsync(), timeout);
    }

    private void offered(Message.Offer o) {
        var state = new RemoteSegment.State(o.leaseId(), localDeadline(System.nanoTime(), o.durationNanos()));
        remote.put(o.leaseId(), state);
        var segment = new RemoteSegment(this, state, o.address(), o.length(), o.rkey(), Access.of(o.access()));
        if (!offers.offer(segment)) {
            // Released without waiting for the answer: a peer offering faster than the application takes must not
            // fill the table of unanswered requests (a timer each), nor the log — one warning per session.
            long n = offersReleased.incrementAndGet();
            LOG.log(n == 1 ? Level.WARNING : Level.DEBUG, "an offer of lease " + o.leaseId() + " from " + peerAddress
                    + " found " + OFFER_BACKLOG + " offers untaken; released"
                    + (n == 1 ? " (further ones are released without a warning)" : ""));
            segment.discard();
        }
    }

    /**
     * When the owner ends a lease on its own, the peer is told (REVOKED) — once: a closed block's lease was told at the
     * close, a grace period before it ends. A release the peer asked for is acked instead.
     */
    private void announceRevocation(Lease lease) {
        lease.ended().thenAccept(reason -> {
            if (reason == EndReason.EXPIRED || reason == EndReason.OWNER_CLOSED) tellEnd(lease, reason);
        });
    }

    private void tellEnd(Lease lease, EndReason reason) {
        if (lease.tell()) reply(new Message.Revoked(requestIds.incrementAndGet(), lease.id(), reason.ordinal()));
    }

    /**
     * The offer or grant of {@code lease} is sent: a notice of its end held meanwhile goes now (its block was closed,
     * or it expired, while the key was bound — after the offer, or the peer would drop the notice and use the lease).
     */
    private void announced(Lease lease) {
        if (lease.announced()) {
            EndReason reason = lease.endReason() == EndReason.EXPIRED ? EndReason.EXPIRED : EndReason.OWNER_CLOSED;
            reply(new Message.Revoked(requestIds.incrementAndGet(), lease.id(), reason.ordinal()));
        }
    }

    // ---- requester -------------------------------------------------------------------------------------------

    /**
     * Asks the peer for a lease of {@code size} bytes for {@code duration} with {@code access}.
     *
     * @throws LeaseRefusedException with the peer's reason
     * @throws SessionLostException  if the session is gone
     * @throws FlowControlException  if {@value #MAX_PENDING} requests already wait for the peer's answer
     */
    public RemoteSegment requestRemote(long size, Duration duration, Set<Access> access) {
        return endpoint.await.join(requestRemoteAsync(size, duration, access));
    }

    /**
     * {@link #requestRemote(long, Duration, Set)} without waiting: the future fails with the same exceptions, but
     * {@link SessionLostException} and {@link FlowControlException} are thrown at once, nothing sent.
     */
    public CompletableFuture<RemoteSegment> requestRemoteAsync(long size, Duration duration, Set<Access> access) {
        return requestRemote(size, 8, duration, access);
    }

    /**
     * Asks the peer for a lease of memory for {@code layout}: its size, at an address aligned as it requires.
     *
     * @throws IllegalArgumentException if the layout is empty or needs an alignment above 4096 (a page)
     * @throws LeaseRefusedException    with the peer's reason
     * @throws SessionLostException     if the session is gone
     * @throws FlowControlException     if {@value #MAX_PENDING} requests already wait for the peer's answer
     */
    public RemoteSegment requestRemote(MemoryLayout layout, Duration duration, Set<Access> access) {
        if (layout.byteSize() <= 0 || layout.byteAlignment() > MAX_ALIGNMENT) {
            throw new IllegalArgumentException("a lease needs a size above 0 and an alignment of at most "
                    + MAX_ALIGNMENT + ", the layout has " + layout.byteSize() + " and " + layout.byteAlignment());
        }
        return endpoint.await.join(requestRemote(layout.byteSize(), Math.max(8, layout.byteAlignment()), duration, access));
    }

    private CompletableFuture<RemoteSegment> requestRemote(long size, long alignment, Duration duration,
                                                           Set<Access> access) {
        long sent = System.nanoTime();
        return call(new Message.Request(requestIds.incrementAndGet(), size, alignment, Access.mask(access),
                duration.toNanos())).thenApply(answer -> {
                    if (!(answer instanceof Message.Grant g)) throw refusal(answer);
                    var state = new RemoteSegment.State(g.leaseId(), localDeadline(sent, g.durationNanos()));
                    remote.put(g.leaseId(), state);
                    return new RemoteSegment(this, state, g.address(), g.length(), g.rkey(), Set.copyOf(access));
                });
    }

    /** A margin before the owner's deadline: our clock started before the owner's did, and a request takes time. */
    private static long localDeadline(long sentNanos, long durationNanos) {
        return sentNanos + durationNanos - Math.min(durationNanos / 10, TimeUnit.MILLISECONDS.toNanos(250));
    }

    CompletableFuture<Void> renew(RemoteSegment.State state, Duration duration, long sentNanos) {
        return call(new Message.Renew(requestIds.incrementAndGet(), state.leaseId, duration.toNanos())).thenAccept(a -> {
            if (!(a instanceof Message.Renewed r)) throw refusal(a);
            state.deadlineNanos = localDeadline(sentNanos, r.durationNanos());
        });
    }

    /**
     * Sends a control request; the future completes with its answer, or fails after the request timeout.
     *
     * @throws FlowControlException if {@value #MAX_PENDING} requests already wait for the peer's answer
     */
    CompletableFuture<Message> call(Message request) {
        checkUsable();
        if (pending.size() >= MAX_PENDING) { // a check, not a reservation: concurrent callers may pass it together
            throw new FlowControlException(MAX_PENDING + " control requests already wait for the peer's answer (each"
                    + " at most " + endpoint.requestTimeout() + "): " + peerAddress + " answers none of them");
        }
        CompletableFuture<Message> answer = endpoint.cq().newFuture();
        pending.put(request.requestId(), answer);
        channel.send(request).exceptionally(e -> {
            answer.completeExceptionally(new SessionLostException("sending " + request.getClass().getSimpleName()
                    + " to " + peerAddress + " failed: " + e));
            return null;
        });
        Duration timeout = endpoint.requestTimeout();
        return answer.orTimeout(timeout.toMillis(), TimeUnit.MILLISECONDS).handle((m, e) -> {
            pending.remove(request.requestId());
            if (e == null) return m;
            Throwable cause = e instanceof CompletionException ? e.getCause() : e;
            if (cause instanceof TimeoutException) {
                throw new SessionLostException("no answer to " + request.getClass().getSimpleName() + " within "
                        + timeout + " from " + peerAddress);
            }
            if (cause instanceof RuntimeException r) throw r;
            throw new SessionLostException("session to " + peerAddress + " failed: " + cause);
        });
    }

    /**
     * Waits for a send at most the request timeout. One still waiting for credit then is withdrawn — never posted, its
     * block the caller's again; one already posted reads the block until its completion, so that is waited for.
     */
    private void awaitSent(CompletableFuture<WorkCompletion> sent) {
        try {
            endpoint.await.within(sent, endpoint.requestTimeout(), () -> messages.withdraw(sent));
        } catch (TimeoutException e) {
            throw new FlowControlException("a send to " + peerAddress + " waited " + endpoint.requestTimeout()
                    + " for the peer's credit: the peer takes no messages");
        }
    }

    private static LeaseRefusedException refusal(Message answer) {
        if (answer instanceof Message.Error e) return new LeaseRefusedException(e.code(), "peer refused: " + e.message());
        return new LeaseRefusedException(ErrorCodes.INVALID_REQUEST, "peer answered " + answer);
    }

    /** The account of the peer's address, which the session holds until the endpoint unlists it. */
    PeerAccount peer() {
        return peer;
    }

    /** Requests of this side's still waiting for the peer's answer (tests). */
    int pendingRequests() {
        return pending.size();
    }

    int controlQpNumber() {
        return controlQp.number();
    }

    QueuePair controlQp() {
        return controlQp;
    }

    /**
     * The session's data QP, for traffic outside the session's API. Nothing here checks a lease: that is the point of
     * the owner's revocation — a request through an ended lease's key fails at the owner whatever this side posts.
     */
    public QueuePair queuePair() {
        return dataQp;
    }

    void checkUsable() {
        String lost = lostReason;
        if (lost != null) throw new SessionLostException(lost);
        if (closing) throw new SessionLostException("the session to " + peerAddress + " is closed");
    }

    /**
     * Releases a lease of the peer's: from {@link RemoteSegment#close()} (waiting for the acknowledgement), or — not
     * waiting: no entry in the table of unanswered requests, no timer — from its Cleaner or for an offer past the
     * backlog. A lease the owner already ended (expired, revoked) counts as released.
     */
    CompletableFuture<Void> release(long leaseId, boolean wait) {
        // Gone from the map: the owner revoked it (REVOKED), and ends it on its own; a RELEASE would only cost it an
        // invalidation and an answer on the path of whatever made it revoke (a stored value replaced, say).
        if (remote.remove(leaseId) == null || lostReason != null || closing) return CompletableFuture.completedFuture(null);
        var release = new Message.Release(requestIds.incrementAndGet(), leaseId);
        CompletableFuture<Message> answered = null;
        if (wait) {
            try {
                answered = call(release);
            } catch (FlowControlException e) { // the peer answers nothing: released all the same, not waited for
                LOG.log(Level.DEBUG, "releasing lease " + leaseId + " without waiting: " + e.getMessage());
            }
        }
        if (answered == null) {
            reply(release); // a peer that leaves our control messages untaken loses the session, as for any reply
            return CompletableFuture.completedFuture(null);
        }
        return answered.thenAccept(answer -> {
            boolean alreadyEnded = answer instanceof Message.Error e && e.code() == ErrorCodes.UNKNOWN_LEASE;
            if (!(answer instanceof Message.ReleaseAck) && !alreadyEnded) throw refusal(answer);
        });
    }

    /** The segment's resource in the lifecycle graph, a child of the session's. */
    Resource track(RemoteSegment.State state) {
        try {
            return resource.createChild("remote-segment", "lease " + state.leaseId + " from " + peerAddress,
                    new RemoteSegment.Release(this, state));
        } catch (ResourceClosedException e) {
            throw new SessionLostException("the session to " + peerAddress + " has ended");
        }
    }

    /** A segment was dropped without close() (the graph reported it): counted while the session lives. */
    void leaked(long leaseId) {
        if (lostReason == null && !closing) leakedSegments.incrementAndGet();
    }

    /** Remote segments dropped without close() so far. */
    public long leakedSegments() {
        return leakedSegments.get();
    }

    // ---- completions and the agent ---------------------------------------------------------------------------

    /** A completion of one of this session's QPs that no future claimed: a receive, or a failure. */
    void onCompletion(WorkCompletion wc) {
        boolean data = wc.qpNumber() == dataQp.number();
        if (!wc.isSuccess()) {
            if (data) endpoint.receives().repost((int) wc.wrId()); // flushed: the shared queue's block is still good
            lost((data ? "a data" : "a control") + " receive completed with " + wc.status());
            return;
        }
        if (data) {
            try {
                if (wc.opcode() == WcOpcode.RECV_RDMA_WITH_IMM) { // the data went to a leased block; the buffer is unused
                    endpoint.receives().repost((int) wc.wrId());
                    messages.noticed(wc.immediate());
                } else {
                    boolean withImmediate = wc.hasImmediate();
                    messages.received(new InboundMessage(this, endpoint.receives().take(wc), wc.byteLength(),
                            withImmediate, withImmediate ? wc.immediate() : 0));
                }
            } catch (RuntimeException | OutOfMemoryError e) { // no block for the next receive (memlock)
                lost("receiving a message failed: " + e.getMessage());
            }
            return;
        }
        serve((int) wc.wrId(), wc.byteLength());
    }

    /**
     * Serves a control message. Answers, offers, revocations and credits are served here, on the dispatcher: they only
     * complete futures and post, and a hop to another thread would sit on the path of every call waiting for them.
     * The peer's requests — a grant binds a window, a release invalidates one — may wait, so the session's agent serves
     * them in order; their receive is posted again only once the agent takes them, which bounds its queue.
     */
    private void serve(int slot, int length) {
        Message m;
        try {
            m = MessageCodec.decode(channel.received(slot, length));
        } catch (MalformedMessageException e) {
            repost(slot);
            LOG.log(Level.WARNING, "malformed control message from " + peerAddress + ": " + e.getMessage());
            reply(new Message.Error(e.requestId(), ErrorCodes.MALFORMED, e.getMessage()));
            if (malformed.incrementAndGet() > MALFORMED_LIMIT) lost("the peer sent " + MALFORMED_LIMIT + " malformed messages");
            return;
        }
        boolean waits = m instanceof Message.Request || m instanceof Message.Renew || m instanceof Message.Release;
        if (!waits) {
            if (repost(slot)) handle(m);
        } else if (!agent.offer(() -> {
            if (repost(slot)) handle(m);
        })) {
            lost("the agent's queue overflowed");
        }
    }

    private void handle(Message m) {
        try {
            switch (m) {
                case Message.Request r -> grant(r);
                case Message.Renew r -> renew(r);
                case Message.Release r -> releaseLease(r);
                case Message.Revoked r -> {
                    RemoteSegment.State s = remote.remove(r.leaseId());
                    if (s != null) s.revoked();
                }
                case Message.Credit c -> messages.creditedByPeer(c.messages());
                case Message.Offer o -> offered(o);
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

    /** Loses the session if one of its QPs went to ERROR (the endpoint's periodic check). */
    void checkQueuePairs() {
        if (lostReason != null || closing) return;
        try {
            if (dataQp.state() == QpState.ERROR || controlQp.state() == QpState.ERROR) {
                lost("a QP of the session went to ERROR (a remote access error or a transport failure)");
            }
        } catch (RuntimeException e) { // destroyed meanwhile: the session is ending anyway
        }
    }

    /** The message is decoded: its buffer takes the next one. False if the session broke meanwhile. */
    private boolean repost(int slot) {
        try {
            channel.repost(slot);
            return true;
        } catch (RuntimeException e) {
            lost("reposting a control receive failed: " + e.getMessage());
            return false;
        }
    }

    private void grant(Message.Request r) {
        // Refused before anything is allocated: a peer must not make this side map memory it would refuse anyway.
        if (r.size() > endpoint.limits().maxBytes()) {
            reply(new Message.Error(r.requestId(), ErrorCodes.LIMIT_EXCEEDED, "a lease of " + r.size()
                    + " bytes exceeds the per-peer limit of " + endpoint.limits().maxBytes()));
            return;
        }
        if (r.alignment() > MAX_ALIGNMENT) {
            reply(new Message.Error(r.requestId(), ErrorCodes.INVALID_REQUEST, "alignment " + r.alignment()
                    + " exceeds " + MAX_ALIGNMENT));
            return;
        }
        Block block;
        try {
            block = endpoint.arena().allocateShared(r.size(), r.alignment());
        } catch (IllegalArgumentException | VerbsException | OutOfMemoryError e) { // e.g. the memlock limit
            reply(new Message.Error(r.requestId(), ErrorCodes.OUT_OF_MEMORY, "cannot allocate " + r.size() + " bytes: "
                    + e.getMessage()));
            return;
        }
        Lease lease;
        try {
            lease = leases.grantOwned(block, Duration.ofNanos(r.durationNanos()), Access.of(r.access()));
        } catch (RuntimeException e) { // refused, or the bind failed or timed out: the block is still ours
            block.close();
            int code = e instanceof LeaseRefusedException refused ? refused.code() : ErrorCodes.INVALID_REQUEST;
            reply(new Message.Error(r.requestId(), code, String.valueOf(e.getMessage())));
            return;
        }
        announceRevocation(lease);
        reply(new Message.Grant(r.requestId(), lease.id(), lease.address(), lease.length(), lease.rkey(), r.durationNanos()));
        announced(lease);
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

    /** Sends without waiting (never blocks the caller, often a shared thread); a failed send loses the session. */
    private void reply(Message m) {
        if (lostReason != null) return;
        channel.send(m).exceptionally(e -> {
            lost("a control SEND failed: " + e);
            return null;
        });
    }

    // ---- failure and closing ---------------------------------------------------------------------------------

    /**
     * Blocks on the bootstrap connection, which after the bootstrap carries one thing: the peer's goodbye when it
     * closes — how many messages and notices it posted — and then its end. The goodbye orders the end after the data:
     * the session ends once that many have arrived here, so none is lost to the race between the TCP connection and the
     * data QP's completions. Its end without a goodbye (the peer process died, or its session broke) ends it at once.
     */
    private void watchPeer() {
        try (InputStream in = socket.getInputStream()) {
            byte[] goodbye = in.readNBytes(GOODBYE_BYTES);
            if (goodbye.length == GOODBYE_BYTES) {
                long sent = ByteBuffer.wrap(goodbye).getLong();
                // Its completions may not all be polled yet here: the TCP connection and the data QP race.
                if (!Await.polling(() -> messages.arrivals() >= sent, FLUSH_WAIT)) {
                    lost("the peer closed the session after " + sent + " messages, of which " + messages.arrivals()
                            + " arrived in " + FLUSH_WAIT.toSeconds() + " s");
                }
            }
            // A peer whose access failed closes its broken session: that is a loss (and its backoff), not an end.
            checkQueuePairs();
            if (!closing) lost("the peer closed the session", Level.INFO);
        } catch (IOException e) {
            if (!closing) lost("the session's TCP connection broke: " + e.getMessage(), Level.WARNING);
        }
    }

    /**
     * Tells the peer this side closes, once what it posted has completed (a bounded wait): how many messages and
     * notices to expect before the end (see {@link #watchPeer}).
     */
    private void sayGoodbye(long sent) {
        awaitFlushed();
        try {
            socket.getOutputStream().write(ByteBuffer.allocate(GOODBYE_BYTES).putLong(sent).array());
        } catch (IOException e) {
            LOG.log(Level.DEBUG, "no goodbye to " + peerAddress + ": " + e.getMessage());
        }
    }

    private void lost(String reason) {
        lost(reason, Level.WARNING);
    }

    /**
     * Ends the session from the peer's side; a peer closing it is ordinary (INFO: the session "ended", and what it sent
     * is still received), anything else a failure (WARNING: it was "lost", what arrived is dropped, and the peer waits
     * before its next session is accepted). Never blocks: the caller may be the endpoint's dispatcher.
     */
    private synchronized void lost(String reason, Level level) {
        if (lostReason != null || closing) return;
        lostReason = "session to " + peerAddress + (level == Level.INFO ? " ended: " : " lost: ") + reason;
        leases.stopGranting(); // first: whoever learns of the loss finds the manager refusing
        if (level == Level.INFO) peer.endedCleanly(peerFailuresAtStart);
        else peer.failed();
        ended.complete(lostReason);
        LOG.log(level, lostReason + "; revoking every lease granted to the peer");
        pending.values().forEach(f -> f.completeExceptionally(new SessionLostException(lostReason)));
        remote.values().forEach(RemoteSegment.State::revoked);
        remote.clear();
        if (level == Level.INFO) messages.finish(lostReason);
        else messages.end(lostReason);
        offers.close(new SessionLostException(lostReason)).forEach(RemoteSegment::discard);
        controlQp.moveToError();
        dataQp.moveToError(); // no invalidation can complete on it any more; the manager deallocates windows instead
        Thread.ofVirtual().name("mooring-session-end-" + peerAddress).start(() -> {
            leases.endAll(EndReason.SESSION_LOST);
            awaitFlushed();
            tearDown();
            // Messages nobody took yet stay receivable: the endpoint keeps the session to free them if nobody does.
            endpoint.removed(this, !closing && holdsUntakenMessages());
        });
    }

    /**
     * Waits (a bounded while) until both QPs have completed every request posted on them: so that what the application
     * posted gets its own completion — success on a clean close; the error that broke the session, or a flush, on a
     * lost one — before the QPs are destroyed, instead of a "destroyed" failure.
     */
    private void awaitFlushed() {
        Await.polling(() -> controlQp.outstandingSends() == 0 && dataQp.outstandingSends() == 0, FLUSH_WAIT);
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

    /** {@link #close()} without waiting: completes once every lease is revoked and the session torn down. */
    public CompletableFuture<Void> closeAsync() {
        var done = new CompletableFuture<Void>();
        Thread.ofVirtual().name("mooring-session-close-" + peerAddress).start(() -> {
            try {
                close();
                done.complete(null);
            } catch (RuntimeException e) {
                done.completeExceptionally(e);
            }
        });
        return done;
    }

    /**
     * Revokes every lease granted to the peer, lets the sends under way finish (a bounded wait) and tells the peer how
     * many to expect, so it receives every one before it learns of the end; then tears the connection down. Messages
     * that arrived here and were never taken are freed. A close while another thread closes the session returns once
     * that close is done.
     */
    @Override
    public void close() {
        CompletionDispatcher.checkMayWait();
        boolean first;
        synchronized (this) {
            first = !closing;
            closing = true;
        }
        if (!first) { // another thread closes it: return once it is done (the endpoint's close frees what is shared next)
            if (!agent.isAgentThread()) closedHere.join(); // the closer stops the agent and waits for it
            return;
        }
        try {
            String reason = "session to " + peerAddress + " closed by this side";
            ended.complete(reason);
            if (lostReason == null) peer.endedCleanly(peerFailuresAtStart);
            leases.close();
            long sent = messages.end(reason); // and frees what the application never took
            if (lostReason == null) sayGoodbye(sent);
            tearDown();
            endpoint.removed(this, false);
        } finally {
            closedHere.complete(null);
        }
    }

    /**
     * Frees what the session made, once: by {@link #close()}, or by the session itself once a lost session's leases
     * have ended — an endpoint serving many peers must not depend on the application to clean up after each loss.
     */
    private void tearDown() {
        if (tearingDown.getAndSet(true)) { // the other path does it: wait, so that close() returns with all freed
            tornDown.join();
            return;
        }
        try {
            leases.close(); // after endAll: frees the pooled windows
            agent.stop();
            closeQuietly(socket);
            offers.close(new SessionLostException("the session to " + peerAddress + " closed"))
                    .forEach(RemoteSegment::discard);
            endpoint.unroute(controlQp, dataQp);
            resource.closeTree(); // the segments still open: their lease ended with the session
            controlQp.close();
            dataQp.close();
            channel.close();
        } finally {
            tornDown.complete(null);
        }
    }

    /** Whether messages the peer sent before its end wait for the application to take them. */
    boolean holdsUntakenMessages() {
        return messages.holdsUntaken();
    }

    /** Whether the session's end has freed what it made: its unlisting from the endpoint comes after. */
    boolean isTornDown() {
        return tornDown.isDone();
    }

    @Override
    public String toString() {
        return "RdmaSession[" + peerAddress + (lostReason != null ? ", lost" : closing ? ", closed" : "") + "]";
    }
}
