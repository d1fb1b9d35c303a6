package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.lifecycle.MooringTimeoutException;
import io.mooring.verbs.CompletionDispatcher;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.values.Access;
import java.io.IOException;
import java.lang.foreign.MemoryLayout;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * A connection to one peer, made by an {@link RdmaEndpoint}: each side can send the other messages, lease its
 * blocks to the other and use the other's. Two RC QP pairs: the <em>control</em> QP carries the lease agent's
 * messages ({@link MessageCodec}); the <em>data</em> QP carries the application's messages (flow-controlled by
 * credits, {@link MessageFlow}), the holder's READ/WRITE/atomics, and the binds of the windows that expose this
 * side's leases — a type 2 window is reached only through the QP it was bound through, the peer's data QP's partner.
 * The bootstrap's TCP connection stays open as the liveness signal: when it or a QP breaks, every lease granted to
 * the peer is revoked and every {@link RemoteSegment} of the peer's fails fast.
 *
 * <p>A session has no thread of its own, only virtual ones: its agent, which serves REQUEST, RENEW and RELEASE in
 * order while there are some (waiting for a bind blocks nobody else), and the watcher of the TCP connection. Completions come from the
 * endpoint's dispatcher. Malformed, unknown or forged messages get an ERROR naming the fault; a peer that keeps
 * sending garbage is disconnected.
 *
 * <p>This class is a façade over the session's parts, each one job: {@link SessionLink} (setup, QPs, liveness, goodbye,
 * loss, teardown), {@link SessionMessages} (the application's messages), {@link LeaseClient} (this side's requests for
 * the peer's memory), {@link LeaseAgent} (serving the peer's requests for this side's), {@link Offers} (leases made
 * without being asked, both ways) and {@link ControlInbox} (where control messages arrive and go).
 */
public final class RdmaSession implements AutoCloseable {
    private final RdmaEndpoint endpoint;
    private final InetSocketAddress peerListener; // where this side connected to; null if it accepted
    private final SessionLink link;
    private final SessionMessages messages;
    private final LeaseManager leases;
    private final LeaseClient client;
    private final Offers offers;
    private final ControlInbox inbox;
    /** Completes when the first {@link #close()} returns: a concurrent one waits for it. */
    private final CompletableFuture<Void> closedHere = new CompletableFuture<>();

    /**
     * Sets the session up over a connected {@code socket}, which it then owns. Every step that can fail — a peer
     * that stays silent (bounded by the endpoint's handshake timeout), speaks another version, breaks off the
     * bootstrap, or a QP or buffer this side cannot make — throws with everything made so far freed (the link's subtree
     * in the lifecycle graph closed) and the socket closed.
     */
    RdmaSession(RdmaEndpoint endpoint, Socket socket, PeerAccount peer, InetSocketAddress peerListener)
            throws IOException {
        this.endpoint = endpoint;
        this.peerListener = peerListener;
        this.link = new SessionLink(endpoint, socket, peer); // undoes itself if the bootstrap fails
        boolean done = false;
        try {
            this.messages = new SessionMessages(this, link, endpoint.receives(), endpoint.await,
                    endpoint.requestTimeout(), endpoint.messageWindow());
            this.leases = new LeaseManager(link.dataQp(), endpoint.limits(), endpoint.isolation(), peer);
            this.client = new LeaseClient(link, endpoint.cq(), endpoint.await, endpoint.requestTimeout(),
                    messages::writeWithImm);
            var owner = new LeaseAgent(link, leases, endpoint.arena(), endpoint.limits(), endpoint.revokeTimeout());
            this.offers = new Offers(link, leases, owner, client, endpoint.cq());
            this.inbox = new ControlInbox(link, client, owner, offers, messages);
            QueuePair control = link.controlQp();
            QueuePair data = link.dataQp();
            // Undone in reverse: the leases first (their windows are invalidated on the data QP), the routing last.
            endpoint.registry().route(this, control, data);
            link.own("routing", () -> endpoint.registry().unroute(control, data));
            link.own("offers", () -> offers.close(new SessionLostException("the session to " + peerAddress() + " closed")));
            link.own("agent", inbox::stop);
            link.own("leases", leases::close);
            link.connect(endpoint, new Ending());
            done = true;
        } finally {
            if (!done) link.undo();
        }
    }

    /** The peer's address (its end of the bootstrap connection). */
    public SocketAddress peerAddress() {
        return link.peerAddress();
    }

    /** This side's address (its end of the bootstrap connection), as a socket's local address. */
    public SocketAddress localAddress() {
        return link.localAddress();
    }

    /**
     * Another session to the same peer, on the same endpoint — so the same protection domain, arena and registered
     * memory — with queue pairs of its own (async-rdma's {@code new_connect}): for traffic that must not wait behind
     * this session's. Only the side that connected can open one; it counts against the same per-peer limits.
     *
     * @throws IllegalStateException if this side accepted the session (the peer connects again instead)
     */
    public CompletableFuture<RdmaSession> connectAgainAsync() {
        if (peerListener == null) {
            throw new IllegalStateException("this side accepted the session to " + peerAddress() + ": the peer, which"
                    + " connected, opens more sessions");
        }
        return endpoint.connectAsync(peerListener);
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
        return messages.peerMaxMessageSize();
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
        return messages.send(message, length, false, 0);
    }

    /**
     * {@link #sendAsync(Block, int)} with a 32-bit immediate value the receiver gets beside the bytes. The value travels
     * in 4 bytes after the message's, so {@code length} may be at most {@link #peerMaxMessageSize()} − 4.
     */
    public CompletableFuture<WorkCompletion> sendWithImmAsync(Block message, int length, int immediate) {
        return messages.send(message, length, true, immediate);
    }

    /**
     * Sends the whole block and waits until it is sent (see {@link #sendAsync}). It waits at most the request timeout
     * for a credit, then throws {@link FlowControlException} and the message is not sent; once posted, it is waited for.
     */
    public void send(Block message) {
        messages.sendAndWait(message, false, 0);
    }

    /** {@link #send(Block)} with an immediate value. */
    public void sendWithImm(Block message, int immediate) {
        messages.sendAndWait(message, true, immediate);
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

    /** Waits for the next message at most {@code timeout}, else throws {@link MooringTimeoutException} (losing none). */
    public InboundMessage receive(Duration timeout) {
        return endpoint.await.within(() -> receiveAsync(), timeout, "a message");
    }

    /**
     * Waits for the next message.
     *
     * @throws SessionLostException once the session has ended (by the peer or this side) and nothing is left to receive
     */
    public InboundMessage receive() {
        return endpoint.await.join(() -> messages.receive());
    }

    /**
     * The immediate value of the next RDMA WRITE with immediate the peer made into a segment this side leased it
     * ({@link RemoteSegment#writeWithImmAsync} on its side): the data is in place when this completes.
     */
    public CompletableFuture<Integer> receiveWriteImmAsync() {
        return messages.receiveWriteImm();
    }

    /** Waits for the next WRITE with immediate at most {@code timeout}, else throws {@link MooringTimeoutException}. */
    public int receiveWriteImm(Duration timeout) {
        return endpoint.await.within(() -> receiveWriteImmAsync(), timeout, "a write with immediate");
    }

    // ---- calls -----------------------------------------------------------------------------------------------

    /**
     * Sends the first {@code length} bytes of {@code request} to the peer as a call, which its {@link #receive()}
     * delivers as an {@link InboundMessage#isCall() InboundMessage} to {@linkplain InboundMessage#replyAsync reply} to.
     * The future completes with that reply — the very block the NIC wrote, the caller's to close — and with no other;
     * replies never show up in {@link #receive()}. The request is sent as {@link #sendAsync} sends (in call order,
     * waiting for credit if need be); the block must not change until the future completes, and is the caller's again
     * then. Many calls may be outstanding, from any threads.
     *
     * <p>Cancelling the future (or {@code orTimeout}) gives the call up: its slot is freed, a request still waiting for
     * credit is never sent, and a reply that arrives later is freed ({@link #lateReplies()}). A request already posted
     * is read by the NIC until its send completes; {@link #call(Block, Duration)} waits for that before it throws.
     *
     * @throws IllegalArgumentException if {@code length} exceeds the block or {@link #peerMaxMessageSize()}
     * @throws FlowControlException     if {@value PendingCalls#MAX_OUTSTANDING} calls already wait for replies, or
     *                                  {@value MessageFlow#MAX_WAITING} sends for credit
     * @throws SessionLostException     if the session has ended (the future fails with it if it ends before the reply)
     */
    public CompletableFuture<InboundMessage> callAsync(Block request, int length) {
        return messages.call(request, length).reply();
    }

    /** {@link #callAsync(Block, int)} with the whole block. */
    public CompletableFuture<InboundMessage> callAsync(Block request) {
        return callAsync(request, (int) Math.min(Integer.MAX_VALUE, request.size()));
    }

    /**
     * Calls with the whole block and waits at most {@code timeout} for the reply. On a timeout the call is given up
     * (a late reply is freed) and, if the request was posted, its send is waited for: when this returns or throws, the
     * block is the caller's again.
     *
     * @throws MooringTimeoutException if no reply came within {@code timeout} (the session goes on)
     * @see #callAsync(Block, int)
     */
    public InboundMessage call(Block request, Duration timeout) {
        return messages.callAndWait(request, (int) Math.min(Integer.MAX_VALUE, request.size()), timeout);
    }

    /** Replies that arrived after their call was given up (or a second time to one call), freed on arrival. */
    public long lateReplies() {
        return messages.lateReplies();
    }

    CompletableFuture<WorkCompletion> reply(int callId, Block reply, int length) {
        return messages.reply(callId, reply, length);
    }

    void replyAndWait(int callId, Block reply) {
        messages.replyAndWait(callId, reply);
    }

    // What the session's MessageFlow reports: it names the session, so the session passes it on.

    void pastCredits(int window) {
        messages.pastCredits(window);
    }

    void pastWindow(int credits, int window) {
        messages.pastWindow(credits, window);
    }

    void grantCredits(int n) {
        messages.grantCredits(n);
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
        return offer(block, duration, access, 0);
    }

    /**
     * {@link #offer(Block, Duration, Set)} with a {@code tag} the peer reads as {@link RemoteSegment#tag()}: what the
     * lease is for, so that offers of different things need no message beside them.
     */
    public Lease offer(Block block, Duration duration, Set<Access> access, long tag) {
        return endpoint.await.join(() -> offerAsync(block, 0, block.size(), duration, access, tag));
    }

    /** Offers {@code [offset, offset + length)} of {@code block}, as {@link #offer(Block, Duration, Set)} does. */
    public Lease offer(Block block, long offset, long length, Duration duration, Set<Access> access) {
        return endpoint.await.join(() -> offerAsync(block, offset, length, duration, access, 0));
    }

    /**
     * {@link #offer(Block, long, long, Duration, Set)} without waiting: the future completes once the key is bound and
     * the offer sent, or fails with what the blocking form throws. It never throws itself.
     */
    public CompletableFuture<Lease> offerAsync(Block block, long offset, long length, Duration duration,
                                               Set<Access> access) {
        return offerAsync(block, offset, length, duration, access, 0);
    }

    /** {@link #offerAsync(Block, long, long, Duration, Set)} with a {@code tag} ({@link RemoteSegment#tag()}). */
    public CompletableFuture<Lease> offerAsync(Block block, long offset, long length, Duration duration,
                                               Set<Access> access, long tag) {
        return offers.offer(block, offset, length, duration, access, tag);
    }

    /**
     * The next lease the peer offers, as a segment this side may use until the lease ends (async-rdma's
     * {@code receive_remote_mr}). Offers nobody takes wait in a queue of {@value Offers#BACKLOG}; past it they are
     * released at once, by a RELEASE that waits for no answer (so a peer offering faster than the application takes
     * costs nothing that stays).
     */
    public CompletableFuture<RemoteSegment> receiveOfferAsync() {
        return offers.take();
    }

    /** Waits for the next offer at most {@code timeout}, else throws {@link MooringTimeoutException}. */
    public RemoteSegment receiveOffer(Duration timeout) {
        return endpoint.await.within(() -> receiveOfferAsync(), timeout, "an offer");
    }

    // ---- holder ----------------------------------------------------------------------------------------------

    /**
     * Asks the peer for a lease of {@code size} bytes for {@code duration} with {@code access}.
     *
     * @throws LeaseRefusedException   with the peer's reason
     * @throws SessionLostException    if the session is gone
     * @throws FlowControlException    if {@value LeaseClient#MAX_PENDING} requests already wait for the peer's answer
     * @throws MooringTimeoutException if the peer did not answer within the {@link RdmaEndpoint#requestTimeout()}: the
     *         session goes on; a lease granted after it is released as it arrives
     */
    public RemoteSegment requestRemote(long size, Duration duration, Set<Access> access) {
        return endpoint.await.join(() -> requestRemoteAsync(size, duration, access));
    }

    /**
     * {@link #requestRemote(long, Duration, Set)} without waiting: the future fails with the same exceptions, but
     * {@link SessionLostException} and {@link FlowControlException} are thrown at once, nothing sent.
     */
    public CompletableFuture<RemoteSegment> requestRemoteAsync(long size, Duration duration, Set<Access> access) {
        return client.request(size, 8, duration, access);
    }

    /**
     * Asks the peer for a lease of memory for {@code layout}: its size, at an address aligned as it requires.
     *
     * @throws IllegalArgumentException if the layout is empty or needs an alignment above 4096 (a page)
     * @throws RuntimeException         as {@link #requestRemote(long, Duration, Set)} does
     */
    public RemoteSegment requestRemote(MemoryLayout layout, Duration duration, Set<Access> access) {
        if (layout.byteSize() <= 0 || layout.byteAlignment() > LeaseClient.MAX_ALIGNMENT) {
            throw new IllegalArgumentException("a lease needs a size above 0 and an alignment of at most "
                    + LeaseClient.MAX_ALIGNMENT + ", the layout has " + layout.byteSize() + " and "
                    + layout.byteAlignment());
        }
        return endpoint.await.join(() -> client.request(layout.byteSize(), Math.max(8, layout.byteAlignment()), duration,
                access));
    }

    /**
     * The session's data QP, for traffic outside the session's API. Nothing here checks a lease: that is the point of
     * the owner's revocation — a request through an ended lease's key fails at the owner whatever this side posts.
     */
    public QueuePair queuePair() {
        return link.dataQp();
    }

    /** Remote segments dropped without close() so far. */
    public long leakedSegments() {
        return client.leakedSegments();
    }

    /** The holder's part (tests: forged requests, the table of unanswered ones). */
    LeaseClient client() {
        return client;
    }

    /** The link (tests: raw control traffic). */
    SessionLink link() {
        return link;
    }

    // ---- completions, the endpoint's checks ------------------------------------------------------------------

    /** A completion of one of this session's QPs that no future claimed: a receive, or a failure. */
    void onCompletion(WorkCompletion wc) {
        if (wc.qpNumber() == link.dataQp().number()) messages.onCompletion(wc);
        else inbox.onCompletion(wc);
    }

    /** Loses the session if one of its QPs went to ERROR (the endpoint's periodic check). */
    void checkQueuePairs() {
        link.checkQueuePairs();
    }

    /** The account of the peer's address, which the session holds until the endpoint unlists it. */
    PeerAccount peer() {
        return link.peer();
    }

    /** Whether messages the peer sent before its end wait for the application to take them. */
    boolean holdsUntakenMessages() {
        return messages.holdsUntaken();
    }

    /** Whether the session's end has freed what it made: its unlisting from the endpoint comes after. */
    boolean isTornDown() {
        return link.isTornDown();
    }

    // ---- the end ---------------------------------------------------------------------------------------------

    /** Why the session ended on the peer's side (it closed it, or the session broke), or null while it works. */
    public String lostReason() {
        return link.lostReason();
    }

    /**
     * Completes, never exceptionally, when the session ends, with how and why ({@link SessionEnd}): closed by this side,
     * ended by the peer, or lost to what broke it — so an application learns of a lost peer without polling, and
     * {@code isDone()} is true for every caller from then on. Dependents added before the end run on a virtual thread
     * of their own (never the dispatcher), so {@code session.closed().thenRun(session::close)} is safe.
     */
    public CompletableFuture<SessionEnd> closed() {
        return link.closed();
    }

    /** {@link #close()} without waiting: completes once every lease is revoked and the session torn down. */
    public CompletableFuture<Void> closeAsync() {
        var done = new CompletableFuture<Void>();
        Thread.ofVirtual().name("mooring-session-close-" + peerAddress()).start(() -> {
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
        if (!link.beginClose()) { // another thread closes it: return once it is done (the endpoint's close frees next)
            if (!inbox.isAgentThread()) closedHere.join(); // the closer stops the agent and waits for it
            return;
        }
        try {
            leases.close();
            long sent = messages.end("session to " + peerAddress() + " closed by this side"); // frees what was untaken
            if (link.lostReason() == null) link.sayGoodbye(sent);
            link.tearDown();
            endpoint.registry().removed(this, false);
        } finally {
            closedHere.complete(null);
        }
    }

    /** How the session's parts end when its link goes down (the peer left, or the session broke). */
    private final class Ending implements SessionLink.Listener {
        @Override
        public long arrivals() {
            return messages.arrivals();
        }

        @Override
        public void linkLost(String reason, boolean clean) {
            leases.stopGranting(); // first: whoever learns of the loss finds the manager refusing
            client.linkLost(reason);
            if (clean) messages.finish(reason);
            else messages.end(reason);
            offers.close(new SessionLostException(reason));
        }

        @Override
        public void cleanUp() {
            leases.endAll(EndReason.SESSION_LOST);
            link.awaitFlushed();
            link.tearDown();
            // Messages nobody took yet stay receivable: the endpoint keeps the session to free them if nobody does.
            endpoint.registry().removed(RdmaSession.this, !link.isClosing() && messages.holdsUntaken());
        }
    }

    @Override
    public String toString() {
        return "RdmaSession[" + peerAddress() + (link.lostReason() != null ? ", lost" : link.isClosing() ? ", closed" : "")
                + "]";
    }
}
