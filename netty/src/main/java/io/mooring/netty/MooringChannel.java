package io.mooring.netty;

import io.mooring.lease.ConnectFailedException;
import io.mooring.lease.RdmaSession;
import io.mooring.verbs.WorkCompletion;
import io.netty.buffer.ByteBuf;
import io.netty.channel.AbstractChannel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelMetadata;
import io.netty.channel.ChannelOutboundBuffer;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
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
 * its write succeeded — and a write behind it that must be copied waits for that (one sent as it is follows at once).
 * Each message received goes up the pipeline as buffers over the very block the NIC wrote (at most the
 * {@code RECVBUF_ALLOCATOR}'s guess each; {@link InboundStream}); the pipeline's release gives the block back to the
 * arena. Only {@link ByteBuf}s are written.
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
 * <p>Completions run on the channel's loop: at once where the loop polls the endpoint's CQ itself, else handed to it
 * as tasks ({@link MooringIoHandler}); the loop never waits for the session.
 */
public final class MooringChannel extends AbstractChannel implements SocketChannel {
    /** Messages handed to the session and not yet sent, at most. */
    static final int MAX_IN_FLIGHT = 32;
    private static final ChannelMetadata METADATA = new ChannelMetadata(false, 16);

    private final MooringChannelConfig config;
    private final LoopPlace place;
    private volatile RdmaSession session;
    private volatile boolean open = true;
    private final SessionSends sends = new SessionSends();
    private final InboundStream inbound;
    private volatile boolean outputShutdown;
    /** The outbound buffer's first messages, posted as they are: their writes wait for their sends (the loop's). */
    private int postedAsIs;
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
        this.inbound = new InboundStream(this, place);
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
        inbound.freeHeld();
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
            s.sendWithImmAsync(MooringBuffers.blockOf(marker), 0, InboundStream.RESET).whenComplete((wc, e) -> marker.release());
        } catch (RuntimeException e) {
            marker.release(); // the session is going anyway
        }
    }

    // ---- reading: the InboundStream's -------------------------------------------------------------------------

    @Override
    protected void doBeginRead() {
        inbound.beginRead();
    }

    /** Auto-read was turned off: a read asked for by auto-read alone is no longer pending (as NIO's channels do). */
    void clearReadPending() {
        inbound.clearReadPending();
    }

    /** Whether a message was taken from the session ahead of a read (the loop's thread): for tests. */
    boolean holdsMessageAhead() {
        return inbound.holdsMessageAhead();
    }

    RdmaSession session() {
        return session;
    }

    /** Messages of the outbound buffer posted as they are and not sent yet (the loop's thread): for tests. */
    int postedAsIs() {
        return postedAsIs;
    }

    // ---- half-closure -------------------------------------------------------------------------------------------

    @Override
    public boolean isInputShutdown() {
        return inbound.isShutdown() || !isActive();
    }

    @Override
    public boolean isOutputShutdown() {
        return outputShutdown || !isActive();
    }

    @Override
    public boolean isShutdown() {
        return inbound.isShutdown() && outputShutdown || !isActive();
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
                inbound.shutDown();
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
        post(s, place.transport().allocator().directBuffer(1), 0, false);
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
     * Posts the flushed writes as messages: buffers that can be are posted as they are — their writes succeed as their
     * sends complete, in order, and a write behind them that must be copied waits for that —; others are gathered into
     * registered copies of up to the peer's message size ({@link OutboundMessages}).
     */
    @Override
    protected void doWrite(ChannelOutboundBuffer in) throws Exception {
        RdmaSession s = session;
        int max = s.peerMaxMessageSize();
        while (postedAsIs == 0 && sends.inFlight() < MAX_IN_FLIGHT) {
            var buf = (ByteBuf) in.current();
            if (buf == null) return;
            if (buf.readableBytes() == 0) {
                in.remove();
            } else if (OutboundMessages.postsAsIs(buf, max, s)) {
                break;
            } else {
                ByteBuf message = OutboundMessages.gather(in, max, s, place.transport().allocator());
                int length = message.readableBytes();
                post(s, message, length, false);
                in.removeBytes(length); // the writes succeed: their bytes are the session's to deliver, even past close
            }
        }
        postAsIs(in, s, max);
    }

    /**
     * Posts, behind the outbound buffer's first messages already posted as they are, the next ones that can be too;
     * they stay in the buffer, each removed as its send completes ({@link #sent}).
     */
    private void postAsIs(ChannelOutboundBuffer in, RdmaSession s, int max) throws Exception {
        int[] posted = {0};
        in.forEachFlushedMessage(msg -> {
            if (posted[0]++ < postedAsIs) return true;
            var buf = (ByteBuf) msg;
            int readable = buf.readableBytes();
            if (readable == 0 || sends.inFlight() >= MAX_IN_FLIGHT || !OutboundMessages.postsAsIs(buf, max, s)) {
                return false;
            }
            post(s, buf.retain(), readable, true);
            postedAsIs++;
            return true;
        });
    }

    /**
     * Hands the first {@code length} bytes of {@code message} to the session; it is released once sent. {@code asIs}:
     * the message is the outbound buffer's own, whose write succeeds when it is sent.
     */
    private void post(RdmaSession s, ByteBuf message, int length, boolean asIs) throws IOException {
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
            place.execute(() -> sent(message, asIs, e), () -> { });
        });
    }

    /** {@code message}'s send completed (on the loop): sends complete in the order they were posted. */
    private void sent(ByteBuf message, boolean asIs, Throwable error) {
        ChannelOutboundBuffer out = unsafe().outboundBuffer();
        if (asIs) {
            postedAsIs--;
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
