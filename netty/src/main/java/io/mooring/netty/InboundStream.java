package io.mooring.netty;

import io.mooring.lease.InboundMessage;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.SessionLostException;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.channel.socket.ChannelInputShutdownReadComplete;
import java.io.IOException;

/**
 * The read side of a {@link MooringChannel}: messages taken from its session, one ahead of the pipeline's reads, and
 * read up the pipeline in the very block the NIC wrote, in parts of at most the {@code RCVBUF_ALLOCATOR}'s guess; the
 * peer's end of output, its reset, and the input's shutdown. On the channel's loop only, but for
 * {@link #isShutdown()}.
 */
final class InboundStream {
    /** The immediate of a reset (SO_LINGER 0): an empty message with it ends the stream as a failure. */
    static final int RESET = 0x52535421;

    private final MooringChannel channel;
    private final LoopPlace place;
    private volatile boolean shutdown;
    private boolean receiving;    // a receive waits on the session
    private boolean readPending;  // the pipeline asked for a read
    private boolean reading;      // in readHeld: a read asked for meanwhile waits for its end
    private ByteBuf held;         // received and not read yet, all or the rest of one message: at most one
    private boolean peerEnded;    // the peer's end of output, or of the session, came: nothing more will

    InboundStream(MooringChannel channel, LoopPlace place) {
        this.channel = channel;
        this.place = place;
    }

    boolean isShutdown() {
        return shutdown;
    }

    /**
     * A read: what is held is read on a task of its own (not here, where an auto-read asks from within the last read's
     * {@code channelReadComplete}: a message split by many reads would nest as deep), else the next message is.
     */
    void beginRead() {
        readPending = true;
        if (reading) return;
        if (held != null) channel.eventLoop().execute(this::readHeld);
        else receive();
    }

    /** Auto-read was turned off: a read asked for by auto-read alone is no longer pending (as NIO's channels do). */
    void clearReadPending() {
        if (!channel.isRegistered() || channel.eventLoop().inEventLoop()) readPending = false;
        else channel.eventLoop().execute(() -> readPending = false);
    }

    /** Whether a message was taken from the session ahead of a read: for tests. */
    boolean holdsMessageAhead() {
        return held != null;
    }

    /** Shuts the input down: nothing more is read, what the peer still sends is freed as it comes. */
    void shutDown() {
        shutdown = true;
        freeHeld();
        receive();
    }

    /** Frees the message taken ahead of a read that will not come (the channel closes). */
    void freeHeld() {
        if (held != null) held.release();
        held = null;
    }

    /**
     * Keeps one receive waiting on the session — also after a read, so one message is taken ahead of the next read and
     * the peer's end is seen even by a channel that reads no more (as epoll sees a peer's FIN without a read).
     */
    void receive() {
        RdmaSession s = channel.session();
        if (receiving || held != null || peerEnded || !channel.isOpen() || s == null) return;
        receiving = true;
        place.whenDone(s::receiveAsync, this::received, InboundMessage::close);
    }

    private void received(InboundMessage m, Throwable error) {
        receiving = false;
        if (error != null) {
            ended(error);
        } else if (!channel.isOpen()) {
            m.close();
        } else if (m.hasImmediate()) { // the peer's reset: only that carries an immediate
            m.close();
            peerEnded = true;
            channel.pipeline().fireExceptionCaught(new IOException("connection reset by " + m.session().peerAddress()
                    + " (it closed with SO_LINGER 0)"));
            closeChannel();
        } else if (m.length() == 0) { // the peer's end of output: a write is never empty
            m.close();
            ended(null);
        } else if (shutdown) { // shut down here: freed, and its credit goes back so that the peer may go on
            m.close();
            receive();
        } else {
            held = place.transport().allocator().wrap(m.block(), m.length()); // the block the NIC wrote, no copy
            if (readPending) readHeld();
        }
    }

    /**
     * One read loop, as a socket channel's: the held message goes up the pipeline whole, or in parts of at most the
     * {@code RCVBUF_ALLOCATOR}'s guess (slices of the same block), while its handle says to read on; then
     * {@code channelReadComplete}, and the next message is received ahead.
     */
    @SuppressWarnings("deprecation") // Handle: what Unsafe.recvBufAllocHandle() gives, as Netty's own channels use it
    private void readHeld() {
        if (!readPending || held == null || !channel.isOpen()) return;
        ChannelPipeline pipeline = channel.pipeline();
        RecvByteBufAllocator.Handle handle = channel.unsafe().recvBufAllocHandle();
        handle.reset(channel.config());
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
            pipeline.fireChannelRead(part);
        } while (held != null && channel.isOpen() && handle.continueReading());
        reading = false;
        handle.readComplete();
        pipeline.fireChannelReadComplete(); // where auto-read asks for the next read
        if (readPending && held != null) channel.eventLoop().execute(this::readHeld); // read() was called in the loop
        receive();
    }

    /**
     * The peer will send no more: it shut its output down ({@code error} null), closed the session, or the session
     * broke. What it sent before has been read. With {@code ALLOW_HALF_CLOSURE} the input is shut down — a
     * {@link ChannelInputShutdownEvent} and, every byte having been read, a {@link ChannelInputShutdownReadComplete} —
     * and the channel may still write (while the peer's session lasts); without it the channel closes.
     */
    private void ended(Throwable error) {
        peerEnded = true;
        if (!channel.isOpen()) return;
        if (error != null && !(error instanceof SessionLostException)) {
            channel.pipeline().fireExceptionCaught(error);
            closeChannel();
        } else if (!channel.config().isAllowHalfClosure()) {
            closeChannel();
        } else {
            if (!shutdown) {
                shutdown = true;
                channel.pipeline().fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
            }
            channel.pipeline().fireUserEventTriggered(ChannelInputShutdownReadComplete.INSTANCE);
        }
    }

    private void closeChannel() {
        channel.unsafe().close(channel.unsafe().voidPromise());
    }
}
