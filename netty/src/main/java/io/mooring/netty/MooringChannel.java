package io.mooring.netty;

import io.mooring.lease.ConnectFailedException;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.SessionLostException;
import io.mooring.verbs.WorkCompletion;
import io.netty.buffer.ByteBuf;
import io.netty.channel.AbstractChannel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelInputShutdownReadComplete;
import io.netty.channel.socket.DuplexChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.SocketChannelConfig;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.nio.channels.AlreadyConnectedException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ConnectionPendingException;
import java.nio.channels.NotYetConnectedException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * A Netty channel over one {@link RdmaSession}: an ordered byte stream, as a TCP socket channel is. A {@link ByteBuf}
 * written goes out as one or more messages of at most the peer's maximum message size, in write order: a buffer of a
 * {@link MooringByteBufAllocator} (the channel's default allocator) whose bytes start its block is sent as it is, any
 * other is copied once into a registered buffer — the copies of one flush gathered into as few messages as fit, as a
 * socket's {@code writev} sends them. A copied write succeeds once its copy is handed to the session; one sent as it is
 * succeeds when its send completes — the NIC reads the caller's memory until then, so a writer may reuse a buffer once
 * its write succeeded — and the writes behind it wait for that. Each message received goes up the pipeline as buffers
 * over the very block the NIC wrote (at most the {@code RECVBUF_ALLOCATOR}'s guess each); the pipeline's release gives
 * the block back to the arena. Only {@link ByteBuf}s are written.
 *
 * <p>Connect by {@link InetSocketAddress} to a {@link MooringServerChannel}'s bound address (the endpoint's bootstrap);
 * {@code CONNECT_TIMEOUT_MILLIS} bounds it. Back-pressure: at most {@value #MAX_IN_FLIGHT} messages are handed to the
 * session at once — those beyond the peer's credits wait there — and the rest stays in the outbound buffer, whose
 * water marks turn the channel unwritable; a peer that reads nothing so stops the writer. With auto-read off, at most
 * one message is taken from the session ahead of {@code read()}, so the peer gets no more credit back.
 *
 * <p>It is a {@link SocketChannel}, so that applications written for one ({@code ChannelInitializer<SocketChannel>},
 * {@code SocketChannelConfig}) run unchanged: the socket options a session meets take effect, the others are refused
 * by name. The stream ends as a socket's does ({@link DuplexChannel}): {@code shutdownOutput()} sends an empty message
 * after the bytes written, the end of the stream; the peer's end of output — or its close — ends the input, which
 * closes the channel, or with {@code ALLOW_HALF_CLOSURE} only shuts its input down. A close lets what the writes handed
 * the session go out first ({@code SO_LINGER}), then closes the session off the loop; with {@code SO_LINGER} 0 the
 * peer sees a reset.
 *
 * <p>Completions come on the endpoint's dispatcher thread and are handed to the channel's loop as tasks; the loop
 * never waits for the session.
 */
public final class MooringChannel extends AbstractChannel implements SocketChannel {
    /** Messages handed to the session and not yet sent, at most. */
    static final int MAX_IN_FLIGHT = 32;
    private static final ChannelMetadata METADATA = new ChannelMetadata(false, 16);
    /** The immediate of a reset (SO_LINGER 0): an empty message with it ends the stream as a failure. */
    private static final int RESET = 0x52535421;

    private final MooringChannelConfig config;
    private final LoopPlace place;
    private volatile RdmaSession session;
    private volatile boolean open = true;
    private final SessionSends sends = new SessionSends();
    private volatile boolean inputShutdown;
    private volatile boolean outputShutdown;
    // the loop's thread only
    private boolean receiving;    // a receive waits on the session
    private boolean readPending;  // the pipeline asked for a read
    private boolean reading;      // in readHeld: a read asked for meanwhile waits for its end
    private ByteBuf held;         // received and not read yet, all or the rest of one message: at most one
    private boolean peerEnded;    // the peer's end of output, or of the session, came: nothing more will
    private ByteBuf sentAsIs;     // the outbound buffer's current message, posted as it is: its write waits for the send
    private final PendingConnect connect;

    /** A channel to connect (what {@code Bootstrap.channel(MooringChannel.class)} makes). */
    public MooringChannel() {
        this(null, null);
    }

    /** A channel over a session {@code parent} accepted. */
    MooringChannel(MooringServerChannel parent, RdmaSession session) {
        super(parent);
        this.session = session;
        this.config = new MooringChannelConfig(this);
        this.place = new LoopPlace(this);
        this.connect = new PendingConnect(this, place);
    }

    @Override
    public MooringServerChannel parent() {
        return (MooringServerChannel) super.parent();
    }

    @Override
    public SocketChannelConfig config() {
        return config;
    }

    @Override
    public InetSocketAddress localAddress() {
        return (InetSocketAddress) super.localAddress();
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return (InetSocketAddress) super.remoteAddress();
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public boolean isActive() {
        return open && session != null;
    }

    @Override
    public ChannelMetadata metadata() {
        return METADATA;
    }

    @Override
    protected AbstractUnsafe newUnsafe() {
        return new MooringUnsafe();
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        return LoopPlace.fits(loop);
    }

    @Override
    protected void doRegister(ChannelPromise promise) {
        place.register(promise, config);
    }

    @Override
    protected void doDeregister() {
        place.deregister();
    }

    /** This side's end of the session's bootstrap connection, as a socket's local address; null before a connect. */
    @Override
    protected SocketAddress localAddress0() {
        RdmaSession s = session;
        return s == null ? null : s.localAddress();
    }

    @Override
    protected SocketAddress remoteAddress0() {
        RdmaSession s = session;
        return s == null ? null : s.peerAddress();
    }

    /** @throws UnsupportedOperationException always: a session starts from the endpoint, not a bound address */
    @Override
    protected void doBind(SocketAddress local) {
        throw new UnsupportedOperationException("a MooringChannel connects from its endpoint and binds to no address ("
                + local + "): bind a MooringServerChannel to accept sessions");
    }

    @Override
    protected void doDisconnect() {
        doClose();
    }

    /**
     * Frees the message taken ahead of a read, and closes the session once the messages handed to it are sent
     * ({@link SessionSends}), but at most {@code SO_LINGER} seconds later (default: the endpoint's request timeout; 0: at
     * once, dropping those still waiting for the peer's credit).
     */
    @Override
    protected void doClose() {
        open = false;
        connect.closed();
        if (held != null) held.release(); // taken ahead of a read that will not come
        held = null;
        RdmaSession s = session;
        if (s == null) return;
        Duration linger = config.linger(s.endpoint());
        if (linger.isZero() && isRegistered()) reset(s); // unregistered (closed forcibly), it has no allocator: it ends
        sends.close(s, linger);
    }

    /**
     * {@code SO_LINGER} 0: a reset, as a socket's — the peer's channel fails with "connection reset" rather than ending
     * cleanly. The marker is an empty message with an immediate (the end of output has none); the session's close sends
     * it if it has credit, else the peer sees the session end without it.
     */
    private void reset(RdmaSession s) {
        ByteBuf marker = place.transport().allocator().directBuffer(1);
        try {
            s.sendWithImmAsync(MooringBuffers.blockOf(marker), 0, RESET).whenComplete((wc, e) -> marker.release());
        } catch (RuntimeException e) {
            marker.release(); // the session is going anyway
        }
    }

    // ---- reading ------------------------------------------------------------------------------------------------

    /**
     * A read: what is held is read on a task of its own (not here, where an auto-read asks from within the last read's
     * {@code channelReadComplete}: a message split by many reads would nest as deep), else the next message is.
     */
    @Override
    protected void doBeginRead() {
        readPending = true;
        if (reading) return;
        if (held != null) eventLoop().execute(this::readHeld);
        else receive();
    }

    /** Auto-read was turned off: a read asked for by auto-read alone is no longer pending (as NIO's channels do). */
    void clearReadPending() {
        if (!isRegistered() || eventLoop().inEventLoop()) readPending = false;
        else eventLoop().execute(() -> readPending = false);
    }

    /**
     * Keeps one receive waiting on the session — also after a read, so one message is taken ahead of the next read and
     * the peer's end is seen even by a channel that reads no more (as epoll sees a peer's FIN without a read).
     */
    private void receive() {
        RdmaSession s = session;
        if (receiving || held != null || peerEnded || !open || s == null) return;
        receiving = true;
        place.whenDone(s::receiveAsync, this::received, InboundMessage::close);
    }

    private void received(InboundMessage m, Throwable error) {
        receiving = false;
        if (error != null) {
            inputEnded(error);
        } else if (!open) {
            m.close();
        } else if (m.hasImmediate()) { // the peer's reset: only that carries an immediate
            m.close();
            peerEnded = true;
            pipeline().fireExceptionCaught(new IOException("connection reset by " + m.session().peerAddress()
                    + " (it closed with SO_LINGER 0)"));
            unsafe().close(unsafe().voidPromise());
        } else if (m.length() == 0) { // the peer's end of output: a write is never empty
            m.close();
            inputEnded(null);
        } else if (inputShutdown) { // shut down here: freed, and its credit goes back so that the peer may go on
            m.close();
            receive();
        } else {
            held = place.transport().allocator().wrap(m.block(), m.length()); // the block the NIC wrote, no copy
            if (readPending) readHeld();
        }
    }

    /** Whether a message was taken from the session ahead of a read (the loop's thread): for tests. */
    boolean holdsMessageAhead() {
        return held != null;
    }

    /**
     * One read loop, as a socket channel's: the held message goes up the pipeline whole, or in parts of at most the
     * {@code RCVBUF_ALLOCATOR}'s guess (slices of the same block), while its handle says to read on; then
     * {@code channelReadComplete}, and the next message is received ahead.
     */
    @SuppressWarnings("deprecation") // Handle: what Unsafe.recvBufAllocHandle() gives, as Netty's own channels use it
    private void readHeld() {
        if (!readPending || held == null || !open) return;
        RecvByteBufAllocator.Handle handle = unsafe().recvBufAllocHandle();
        handle.reset(config);
        reading = true;
        do {
            readPending = false;
            int guess = Math.max(1, handle.guess());
            int length = Math.min(held.readableBytes(), guess);
            ByteBuf part = held;
            if (length < held.readableBytes()) {
                part = held.readRetainedSlice(length);
            } else {
                held = null;
            }
            handle.attemptedBytesRead(guess);
            handle.lastBytesRead(length);
            handle.incMessagesRead(1);
            pipeline().fireChannelRead(part);
        } while (held != null && open && handle.continueReading());
        reading = false;
        handle.readComplete();
        pipeline().fireChannelReadComplete(); // where auto-read asks for the next read
        if (readPending && held != null) eventLoop().execute(this::readHeld); // read() was called in the loop
        receive();
    }

    /**
     * The peer will send no more: it shut its output down ({@code error} null), closed the session, or the session
     * broke. What it sent before has been read. With {@code ALLOW_HALF_CLOSURE} the input is shut down — a
     * {@link ChannelInputShutdownEvent} and, every byte having been read, a {@link ChannelInputShutdownReadComplete} —
     * and the channel may still write (while the peer's session lasts); without it the channel closes.
     */
    private void inputEnded(Throwable error) {
        peerEnded = true;
        if (!open) return;
        if (error != null && !(error instanceof SessionLostException)) {
            pipeline().fireExceptionCaught(error);
            unsafe().close(unsafe().voidPromise());
        } else if (!config.isAllowHalfClosure()) {
            unsafe().close(unsafe().voidPromise());
        } else {
            if (!inputShutdown) {
                inputShutdown = true;
                pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
            }
            pipeline().fireUserEventTriggered(ChannelInputShutdownReadComplete.INSTANCE);
        }
    }

    // ---- half-closure -------------------------------------------------------------------------------------------

    @Override
    public boolean isInputShutdown() {
        return inputShutdown || !isActive();
    }

    @Override
    public boolean isOutputShutdown() {
        return outputShutdown || !isActive();
    }

    @Override
    public boolean isShutdown() {
        return inputShutdown && outputShutdown || !isActive();
    }

    @Override
    public ChannelFuture shutdownInput() {
        return shutdownInput(newPromise());
    }

    /**
     * Shuts the input down: nothing more is read, what the peer still sends is freed as it comes (so that its writes
     * go on, as a socket's do after {@code SHUT_RD}).
     */
    @Override
    public ChannelFuture shutdownInput(ChannelPromise promise) {
        onLoop(() -> {
            if (!open) {
                promise.setFailure(new ClosedChannelException());
            } else if (session == null) {
                promise.setFailure(new NotYetConnectedException());
            } else {
                inputShutdown = true;
                if (held != null) held.release();
                held = null;
                receive();
                promise.setSuccess();
            }
        });
        return promise;
    }

    @Override
    public ChannelFuture shutdownOutput() {
        return shutdownOutput(newPromise());
    }

    /**
     * Shuts the output down: what the writes handed the session still goes out, then an empty message — the end of
     * the stream, as a FIN — while the session stays up for the peer's bytes. Writes not handed over yet fail, and a
     * {@link io.netty.channel.socket.ChannelOutputShutdownEvent} follows (Netty's own shutdown).
     */
    @Override
    public ChannelFuture shutdownOutput(ChannelPromise promise) {
        onLoop(() -> ((AbstractUnsafe) unsafe()).shutdownOutput(promise));
        return promise;
    }

    @Override
    protected void doShutdownOutput() throws IOException {
        outputShutdown = true;
        RdmaSession s = session;
        if (s == null) throw new NotYetConnectedException();
        post(s, place.transport().allocator().directBuffer(1), 0);
    }

    @Override
    public ChannelFuture shutdown() {
        return shutdown(newPromise());
    }

    /** Shuts the output, then the input down; fails with the first failure. */
    @Override
    public ChannelFuture shutdown(ChannelPromise promise) {
        shutdownOutput().addListener(output -> shutdownInput().addListener(input -> {
            Throwable cause = output.cause() != null ? output.cause() : input.cause();
            if (cause == null) promise.setSuccess();
            else promise.setFailure(cause);
        }));
        return promise;
    }

    private void onLoop(Runnable task) {
        if (eventLoop().inEventLoop()) task.run();
        else eventLoop().execute(task);
    }

    // ---- writing ------------------------------------------------------------------------------------------------

    /**
     * Posts the flushed writes as messages: a buffer that can be is posted as it is, and the writes behind it wait for
     * its send; others are gathered into registered copies of up to the peer's message size ({@link OutboundMessages}).
     */
    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws Exception {
        RdmaSession s = session;
        int max = s.peerMaxMessageSize();
        while (sentAsIs == null && sends.inFlight() < MAX_IN_FLIGHT) {
            Object msg = in.current();
            if (msg == null) return;
            ByteBuf buf = (ByteBuf) msg;
            int readable = buf.readableBytes();
            if (readable == 0) {
                in.remove();
            } else if (OutboundMessages.postsAsIs(buf, max, s)) {
                sentAsIs = buf; // removed, its write succeeding, when its send completes (sent)
                post(s, buf.retain(), readable);
                return;
            } else {
                ByteBuf message = OutboundMessages.gather(in, max, s, place.transport().allocator());
                int length = message.readableBytes();
                post(s, message, length);
                in.removeBytes(length); // the writes succeed: their bytes are the session's to deliver, even past close
            }
        }
    }

    /** Hands the first {@code length} bytes of {@code message} to the session; it is released once sent. */
    private void post(RdmaSession s, ByteBuf message, int length) throws IOException {
        CompletableFuture<WorkCompletion> sent;
        try {
            sent = s.sendAsync(MooringBuffers.blockOf(message), length);
        } catch (RuntimeException e) {
            message.release();
            throw new IOException("sending to " + s.peerAddress() + " failed: " + e.getMessage(), e);
        }
        sends.started();
        sent.whenComplete((wc, e) -> {
            message.release(); // any thread: the buffer's block goes back to the arena
            sends.completed();
            place.execute(() -> sent(message, e), () -> { });
        });
    }

    /** {@code message}'s send completed (on the loop): sends complete in the order they were posted. */
    private void sent(ByteBuf message, Throwable error) {
        ChannelOutboundBuffer out = unsafe().outboundBuffer();
        if (message == sentAsIs) {
            sentAsIs = null;
            // Still the current message unless a close or shutdownOutput failed the writes meanwhile.
            if (error == null && out != null && out.current() == message) out.removeBytes(message.readableBytes());
        }
        if (!open) return;
        if (error != null) {
            pipeline().fireExceptionCaught(error instanceof CompletionException ? error.getCause() : error);
            unsafe().close(unsafe().voidPromise());
            return;
        }
        if (out != null && !out.isEmpty()) ((MooringUnsafe) unsafe()).flush0();
    }

    @Override
    protected Object filterOutboundMessage(Object msg) {
        if (msg instanceof ByteBuf) return msg;
        throw new UnsupportedOperationException("a MooringChannel writes ByteBufs, not " + msg.getClass().getName());
    }

    // ---- connecting ---------------------------------------------------------------------------------------------

    /** The session {@code promise}'s connect made: the channel is active (and reads at once if auto-read). */
    void connectedTo(RdmaSession s, ChannelPromise promise) {
        session = s;
        promise.trySuccess();
        pipeline().fireChannelActive();
    }

    Throwable annotateConnectFailure(Throwable cause, SocketAddress peer) {
        return ((MooringUnsafe) unsafe()).annotate(cause, peer);
    }

    private final class MooringUnsafe extends AbstractUnsafe {
        @Override
        public void connect(SocketAddress remote, SocketAddress local, ChannelPromise promise) {
            if (promise.isDone() || !ensureOpen(promise)) return; // cancellable: a session being made is dropped
            if (session != null) {
                promise.setFailure(new AlreadyConnectedException());
            } else if (connect.isPending()) {
                promise.setFailure(new ConnectionPendingException());
            } else if (local != null) {
                promise.setFailure(new UnsupportedOperationException("a MooringChannel connects from its endpoint and"
                        + " binds to no local address (" + local + ")"));
            } else if (!(remote instanceof InetSocketAddress peer)) {
                promise.setFailure(new IllegalArgumentException("a MooringChannel connects to an InetSocketAddress"
                        + " (a MooringServerChannel's bound address), not " + remote));
            } else {
                connect.start(peer, promise, config.getConnectTimeoutMillis());
            }
        }

        /** A channel's connect fails with the socket's own exception, as NIO's does: a ConnectException, say. */
        Throwable annotate(Throwable cause, SocketAddress peer) {
            boolean io = cause instanceof ConnectFailedException && cause.getCause() instanceof IOException;
            return annotateConnectException(io ? cause.getCause() : cause, peer);
        }

        @Override
        protected void flush0() {
            super.flush0();
        }
    }
}
