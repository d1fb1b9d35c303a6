package io.mooring.lease;

import io.mooring.lifecycle.DestroyAction;
import io.mooring.lifecycle.MooringException;
import io.mooring.lifecycle.MooringTimeoutException;
import io.mooring.lifecycle.Resource;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.Bootstrap;
import io.mooring.verbs.BootstrapFailedException;
import io.mooring.verbs.PeerLog;
import io.mooring.verbs.QpInfo;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.values.DeviceAttributes;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.QpState;
import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.Socket;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A session's link to its peer: the bootstrap over TCP, the two RC QPs (control and data) and the control channel
 * over the first, the liveness signal — the bootstrap connection stays open, its end or a QP in ERROR loses the
 * session — the goodbye a closing side writes on it, and whether the session still works.
 *
 * <p>The session is a node of the lifecycle graph, under the protection domain, whose destroy undoes whatever the setup
 * made ({@link #own}), in reverse of the order made — control buffers, QPs, the socket, then what the session adds —
 * after its children (the remote segments the peer leased it). A failed setup and the session's end both close that
 * subtree. The parts are undo steps of the one node, not nodes of their own: eight nodes per session cost ~3 KiB.
 */
final class SessionLink {
    private static final System.Logger LOG = System.getLogger(RdmaSession.class.getName());
    private static final int PROTOCOL_VERSION = MessageCodec.VERSION;
    /** Sends and receives of the control QP; the agent answers each received message with at most one. */
    static final QpCapabilities CONTROL_QP = QpCapabilities.builder().maxSendWr(ControlChannel.SENDS)
            .maxRecvWr(ControlChannel.RECEIVES).maxSendSge(1).maxRecvSge(1).maxInlineData(0).build();
    /**
     * READs and atomics a data QP has outstanding at most, each way, however many more the devices allow: the depth a
     * session negotiates is the largest both devices take, capped here (a NIC gains little past 16 on one QP, and every
     * unit costs responder resources on both sides).
     */
    static final int MAX_READ_DEPTH = 16;
    /**
     * Outstanding requests of the data QP's send queue: the holder's READs and atomics beyond the negotiated depth wait
     * here, as on a NIC, so it holds many depths' worth — besides the messages, calls, replies and binds.
     */
    static final int DATA_SENDS = 16 * MAX_READ_DEPTH;
    /** Scatter entries of a data QP's send: a message, and the trailer of one with an immediate ({@link MessageFrame}). */
    private static final int DATA_SEND_SGES = 2;
    /** The data QP receives from the endpoint's shared queue: its own receive queue is the least one can be. */
    private static final QpCapabilities DATA_QP = QpCapabilities.builder().maxSendWr(DATA_SENDS).maxRecvWr(1)
            .maxSendSge(DATA_SEND_SGES).maxRecvSge(1).maxInlineData(0).build();
    /** RNR retries before a peer that posts no receives is declared lost (7 would retry forever). */
    static final int RNR_RETRY = 6;
    /**
     * How long a peer waits before it sends again into our empty receive queue: 81.92 ms. With {@link #RNR_RETRY}
     * retries a stall of about half a second (a GC pause, a starved core, a slow callback on the dispatcher) costs an
     * honest session nothing; the verbs default (0.64 ms) ended it after 4 ms.
     */
    static final Duration MIN_RNR_TIMER = Duration.ofNanos(81_920_000);
    /**
     * How long a closing or lost session waits for its QPs' requests to complete before destroying them, and how long
     * a peer's goodbye waits for the messages it counts.
     */
    private static final Duration FLUSH_WAIT = Duration.ofSeconds(5);
    /** The goodbye a closing side writes on the bootstrap connection: the messages and notices it posted (a long). */
    private static final int GOODBYE_BYTES = Long.BYTES;
    /**
     * Bootstrap record: protocol version, the data QP's address, the message window and size this side takes, and the
     * READ/atomic depths its device allows (capped at {@link #MAX_READ_DEPTH}) as requester and as responder.
     */
    private static final int RECORD_BYTES = 4 + QpInfo.BYTES + 4 + 4 + 4 + 4;

    /** What the link needs of the session above it. */
    interface Listener {
        /** Messages and notices of the peer's that arrived so far: its goodbye is checked against them. */
        long arrivals();

        /** The link went down: stop at once — refuse, fail whoever waits. Never blocks (the caller may be the dispatcher). */
        void linkLost(String reason, boolean clean);

        /** After {@link #linkLost}, on a thread of its own: end what the session holds, then tear it down. */
        void cleanUp();
    }

    private final Socket socket;
    private final SocketAddress peerAddress;
    private final SocketAddress localAddress;
    private final PeerAccount peer;
    private final Bootstrap bootstrap;
    /** The session in the lifecycle graph: the parent of what it made and of the remote segments the peer leased it. */
    private final Resource node;
    /** What the setup made, each with its undo, in the order made; guarded by itself. */
    private final List<Part> parts = new ArrayList<>(8);
    private boolean partsUndone; // guarded by parts: the session's node was destroyed, nothing more is owned
    private final QueuePair controlQp;
    private final QueuePair dataQp;
    private final ControlChannel channel;
    private final QpInfo peerControl;
    private final QpInfo peerData;
    private final int peerWindow;
    private final int peerMessageSize;
    /** READs and atomics the data QP may have outstanding as requester, and accepts as responder: negotiated. */
    private final int readDepth;
    private final int peerReadDepth;
    private final AtomicLong requestIds = new AtomicLong();
    private Listener listener;
    private volatile String lostReason;
    private final CompletableFuture<SessionEnd> ended = new CompletableFuture<>();
    /**
     * {@link #ended} as the application sees it: one future, so that {@code closed().isDone()} is true for every caller
     * once the session ended; completed on a virtual thread of its own, so that what waits on it never runs on the
     * dispatcher or inside a close.
     */
    private final CompletableFuture<SessionEnd> closed =
            ended.thenApplyAsync(end -> end, task -> Thread.ofVirtual().name("mooring-session-closed").start(task));
    private volatile boolean closing;
    private final AtomicBoolean tearingDown = new AtomicBoolean();
    private final CompletableFuture<Void> tornDown = new CompletableFuture<>();

    /**
     * Runs the bootstrap over a connected {@code socket}, which the link then owns: makes the QPs, exchanges their
     * addresses and the message settings with the peer, then the control buffers. Every step that can fail — a peer
     * that stays silent (bounded by the socket's timeout), speaks another version, breaks off, or a QP or buffer this
     * side cannot make — throws with everything made so far undone and the socket closed.
     */
    SessionLink(RdmaEndpoint endpoint, Socket socket, PeerAccount peer) throws IOException {
        this.socket = socket;
        this.peerAddress = socket.getRemoteSocketAddress();
        this.localAddress = socket.getLocalSocketAddress();
        this.peer = peer;
        var pd = endpoint.pd();
        this.node = pd.resource().graph().create("session", "to " + peerAddress, this::undoParts, pd.resource());
        boolean done = false;
        try {
            try {
                this.bootstrap = Bootstrap.of(socket);
            } catch (BootstrapFailedException e) {
                throw ioFailure(e);
            }
            own("control buffers", this::closeChannel); // freed last: after the QP that posts receives into them
            this.controlQp = pd.createQueuePair(endpoint.cq(), endpoint.cq(), CONTROL_QP);
            own("control QP", controlQp::close);
            this.dataQp = pd.createQueuePair(endpoint.cq(), endpoint.cq(),
                    DATA_QP, endpoint.receives().queue());
            own("data QP", dataQp::close);
            own("socket", () -> closeQuietly(socket)); // closed before the QPs: the peer learns of the end first
            var record = ByteBuffer.allocate(RECORD_BYTES).putInt(PROTOCOL_VERSION);
            dataQp.info(endpoint.connectOptions()).writeTo(record);
            DeviceAttributes device = pd.context().device().attributes();
            int initiates = Math.min(device.maxQpInitRdAtom(), MAX_READ_DEPTH);
            int accepts = Math.min(device.maxQpRdAtom(), MAX_READ_DEPTH);
            record.putInt(endpoint.messageWindow()).putInt(endpoint.maxMessageSize()).putInt(initiates).putInt(accepts)
                    .flip();
            Bootstrap.Peer answer;
            try {
                answer = bootstrap.exchange(controlQp.info(endpoint.connectOptions()), record, RECORD_BYTES);
            } catch (BootstrapFailedException | MooringTimeoutException e) {
                throw ioFailure(e);
            }
            ByteBuffer peerRecord = answer.data();
            int peerVersion = peerRecord.getInt();
            if (peerVersion != PROTOCOL_VERSION) {
                throw new IOException("peer speaks lease protocol " + peerVersion + ", this side " + PROTOCOL_VERSION);
            }
            this.peerControl = answer.qp();
            this.peerData = QpInfo.readFrom(peerRecord);
            this.peerWindow = peerRecord.getInt();
            this.peerMessageSize = peerRecord.getInt();
            int peerInitiates = peerRecord.getInt();
            int peerAccepts = peerRecord.getInt();
            if (peerWindow <= 0 || peerMessageSize <= 0 || peerInitiates <= 0 || peerAccepts <= 0) {
                throw new IOException("peer offers a message window of " + peerWindow + ", a message size of "
                        + peerMessageSize + " and READ depths of " + peerInitiates + " out, " + peerAccepts
                        + " in; all must be positive");
            }
            // Each way, the largest depth both ends take: the requester's outstanding ones all fit at the responder.
            this.readDepth = Math.min(initiates, peerAccepts);
            this.peerReadDepth = Math.min(accepts, peerInitiates);
            // Buffers only for a peer that passed the bootstrap. Its messages come from the endpoint's shared receive
            // queue, which holds a window for every session.
            endpoint.receives().grow(endpoint.sessionCount() * endpoint.messageWindow());
            this.channel = new ControlChannel(controlQp, endpoint.arena());
            done = true;
        } finally {
            if (!done) undo();
        }
    }

    private void closeChannel() {
        if (channel != null) channel.close();
    }

    /** A part of the session and how to undo it. */
    private record Part(String what, DestroyAction undo) {}

    /**
     * Makes {@code undo} a step of the session's destroy: it runs when the session's subtree is closed — at its end, or
     * when its setup fails — before the steps owned earlier.
     *
     * @throws SessionLostException if the session has ended
     */
    void own(String what, DestroyAction undo) {
        synchronized (parts) {
            if (partsUndone || !node.isOpen()) {
                throw new SessionLostException("the session to " + peerAddress + " has ended");
            }
            parts.add(new Part(what, undo));
        }
    }

    /** The session node's destroy: every part undone, newest first, whatever fails; the failures thrown together. */
    private void undoParts() throws Exception {
        List<Part> undo;
        synchronized (parts) {
            partsUndone = true;
            undo = List.copyOf(parts).reversed();
            parts.clear();
        }
        Exception failed = null;
        for (Part p : undo) {
            try {
                p.undo().destroy();
            } catch (Exception e) {
                var failure = new IllegalStateException("undoing the " + p.what() + " of the session to " + peerAddress
                        + " failed: " + e, e);
                if (failed == null) failed = failure;
                else failed.addSuppressed(failure);
            }
        }
        if (failed != null) throw failed;
    }

    /** A child of the session that its holder keeps (a remote segment): closed by its holder, or with the session. */
    Resource child(String kind, String description, DestroyAction onDestroy) {
        try {
            return node.createChild(kind, description, onDestroy);
        } catch (ResourceClosedException e) {
            throw new SessionLostException("the session to " + peerAddress + " has ended");
        }
    }

    /** Undoes a failed setup: everything made so far, in reverse; the socket closed in any case. */
    void undo() {
        closing = true;
        closeQuietly(socket);
        node.closeTree(); // the remote segments, then the parts, newest first
    }


    /**
     * Connects the QPs, posts the control receives and waits until the peer has too; from then on the bootstrap
     * connection only signals liveness, and {@code listener} hears of the link's end.
     */
    void connect(RdmaEndpoint endpoint, Listener listener) throws IOException {
        this.listener = listener;
        var options = endpoint.connectOptions().toBuilder().rnrRetry(RNR_RETRY).minRnrTimer(MIN_RNR_TIMER).build();
        controlQp.connect(peerControl, options);
        dataQp.connect(peerData, options.toBuilder().maxRdAtomic(readDepth).maxDestRdAtomic(peerReadDepth).build());
        channel.start();
        try {
            bootstrap.barrier(); // both sides have receives posted before either sends anything
        } catch (BootstrapFailedException | MooringTimeoutException e) {
            throw ioFailure(e);
        }
        endpoint.connectionWatch().watch(socket.getChannel(), new PeerWatcher());
    }

    /**
     * The IOException under a failed bootstrap step, as the handshake's other steps on this socket throw: Admission
     * tells a broken handshake, a timeout and its watchdog's close of the socket apart by it.
     */
    private static IOException ioFailure(MooringException e) {
        return e.getCause() instanceof IOException io ? io : new IOException(e.getMessage(), e);
    }

    static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            LOG.log(Level.DEBUG, "closing a session socket: " + e.getMessage());
        }
    }

    SocketAddress peerAddress() {
        return peerAddress;
    }

    SocketAddress localAddress() {
        return localAddress;
    }

    PeerAccount peer() {
        return peer;
    }

    QueuePair controlQp() {
        return controlQp;
    }

    QueuePair dataQp() {
        return dataQp;
    }

    ControlChannel channel() {
        return channel;
    }

    /** The message window the peer offered: the messages this side may send ahead of its credit. */
    int peerWindow() {
        return peerWindow;
    }

    /** The largest message the peer takes. */
    int peerMessageSize() {
        return peerMessageSize;
    }

    long nextRequestId() {
        return requestIds.incrementAndGet();
    }

    // ---- control messages ------------------------------------------------------------------------------------

    /** Sends a control message; the future completes when it was sent. */
    CompletableFuture<WorkCompletion> send(Message m) {
        return channel.send(m);
    }

    /** Sends without waiting (never blocks the caller, often a shared thread); a failed send loses the session. */
    void tell(Message m) {
        if (lostReason != null) return;
        channel.send(m).exceptionally(e -> {
            lost("a control SEND failed: " + e);
            return null;
        });
    }

    // ---- state -----------------------------------------------------------------------------------------------

    /** Whether the session still works: neither lost nor closing. */
    boolean isUp() {
        return lostReason == null && !closing;
    }

    void checkUsable() {
        String lost = lostReason;
        if (lost != null) throw new SessionLostException(lost);
        if (closing) throw new SessionLostException("the session to " + peerAddress + " is closed");
    }

    String lostReason() {
        return lostReason;
    }

    boolean isClosing() {
        return closing;
    }

    /**
     * Completes when the session ends, closed or lost, with the reason. Dependents added before the end run on a
     * virtual thread of their own, never on the dispatcher or inside a close: so {@code closed().thenRun(session::close)}
     * may wait. Done for every caller from the moment the session ended; a copy, so a caller completing it changes
     * nothing for the others.
     */
    CompletableFuture<SessionEnd> closed() {
        SessionEnd end = ended.getNow(null);
        return end != null ? CompletableFuture.completedFuture(end) : closed.copy();
    }

    /** Loses the session if one of its QPs went to ERROR (the endpoint's periodic check). */
    void checkQueuePairs() {
        if (!isUp()) return;
        try {
            if (dataQp.state() == QpState.ERROR || controlQp.state() == QpState.ERROR) {
                lost("a QP of the session went to ERROR (a remote access error or a transport failure)");
            }
        } catch (RuntimeException e) { // destroyed meanwhile: the session is ending anyway
        }
    }

    void lost(String reason) {
        lost(reason, Level.WARNING);
    }

    /**
     * Ends the session from the peer's side; a peer closing it is ordinary (INFO: the session "ended", and what it sent
     * is still received), anything else a failure (WARNING: it was "lost", what arrived is dropped, and the peer waits
     * before its next session is accepted). Never blocks: the caller may be the endpoint's dispatcher.
     */
    synchronized void lost(String reason, Level level) {
        if (lostReason != null || closing) return;
        boolean clean = level == Level.INFO;
        lostReason = "session to " + peerAddress + (clean ? " ended: " : " lost: ") + reason;
        listener.linkLost(lostReason, clean); // first: whoever learns of the loss finds the session refusing
        if (!clean) peer.failed();
        ended.complete(new SessionEnd(clean ? SessionEnd.How.ENDED : SessionEnd.How.LOST, lostReason));
        PeerLog.log(LOG, level, lostReason + "; revoking every lease granted to the peer");
        controlQp.moveToError();
        dataQp.moveToError(); // no invalidation can complete on it any more; the manager deallocates windows instead
        Thread.ofVirtual().name("mooring-session-end-" + peerAddress).start(listener::cleanUp);
    }

    /** This side closes the session: true for the first caller only, who then ends it. */
    boolean beginClose() {
        synchronized (this) {
            if (closing) return false;
            closing = true;
        }
        ended.complete(new SessionEnd(SessionEnd.How.CLOSED, "session to " + peerAddress + " closed by this side"));
        return true;
    }

    // ---- liveness --------------------------------------------------------------------------------------------

    /**
     * Hears the bootstrap connection, which after the bootstrap carries one thing: the peer's goodbye when it closes —
     * how many messages and notices it posted — and then its end. The goodbye orders the end after the data: the
     * session ends once that many have arrived here, so none is lost to the race between the TCP connection and the
     * data QP's completions. Its end without a goodbye (the peer process died, its session broke, or it hangs up to
     * spare itself the backoff) loses the session at once: a loss, which bars the peer a while, never a clean end.
     */
    private final class PeerWatcher implements ConnectionWatch.Watcher {
        @Override
        public void goodbye(long sent) {
            // Its completions may not all be polled yet here: the TCP connection and the data QP race.
            if (!Await.polling(() -> listener.arrivals() >= sent, FLUSH_WAIT)) {
                lost("the peer closed the session after " + sent + " messages, of which " + listener.arrivals()
                        + " arrived in " + FLUSH_WAIT.toSeconds() + " s");
            }
            // A peer whose access failed closes its broken session: that is a loss (and its backoff), not an end.
            checkQueuePairs();
            if (!closing) lost("the peer closed the session", Level.INFO);
        }

        @Override
        public void ended(String why) {
            if (!closing) lost(why); // a crashed peer, one sparing itself the backoff, or a broken connection: a loss
        }
    }

    /**
     * Tells the peer this side closes, once what it posted has completed (a bounded wait): how many messages and
     * notices to expect before the end (see {@link PeerWatcher}).
     */
    void sayGoodbye(long sent) {
        awaitFlushed();
        try {
            // The watched channel is non-blocking: 8 bytes into an empty send buffer go at once, or the peer sees a loss.
            var goodbye = ByteBuffer.allocate(GOODBYE_BYTES).putLong(sent).flip();
            socket.getChannel().write(goodbye);
            if (goodbye.hasRemaining()) LOG.log(Level.DEBUG, "no room for the goodbye to " + peerAddress);
        } catch (IOException e) {
            LOG.log(Level.DEBUG, "no goodbye to " + peerAddress + ": " + e.getMessage());
        }
    }

    /**
     * Waits (a bounded while) until both QPs have completed every request posted on them: so that what the application
     * posted gets its own completion — success on a clean close; the error that broke the session, or a flush, on a
     * lost one — before the QPs are destroyed, instead of a "destroyed" failure.
     */
    void awaitFlushed() {
        Await.polling(() -> controlQp.outstandingSends() == 0 && dataQp.outstandingSends() == 0, FLUSH_WAIT);
    }

    /**
     * Frees what the session made, once — by closing its subtree — whether this side closed it or the session ended
     * on its own: an endpoint serving many peers must not depend on the application to clean up after each loss. A
     * second caller returns once the first is done.
     */
    void tearDown() {
        if (tearingDown.getAndSet(true)) {
            tornDown.join();
            return;
        }
        try {
            node.closeTree();
        } finally {
            tornDown.complete(null);
        }
    }

    boolean isTornDown() {
        return tornDown.isDone();
    }
}
