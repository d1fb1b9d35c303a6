package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.MooringTimeoutException;
import io.mooring.verbs.CompletionDispatcher;
import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Opcode;
import io.mooring.verbs.values.WcOpcode;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * The application's messages on a session's data QP: checks a send against the peer's message size and posts it
 * through the session's {@link MessageFlow} (credits, order), framed by {@link MessageFrame} (one-way, call, reply);
 * turns the data QP's receive completions into {@link InboundMessage}s, replies to this side's {@link PendingCalls}
 * and write-with-immediate notices; and ends the session when the peer breaks the rules (credits, frames, reply ids).
 */
final class SessionMessages {
    private static final ValueLayout.OfInt TRAILER_VALUE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private final SessionLink link;
    private final MessageFlow flow;
    private final PendingCalls calls = new PendingCalls();
    private final RdmaArena arena;
    private final CompletionQueue cq;
    private final MessageReceives receives;
    private final Await await;
    private final Duration requestTimeout;
    /** The session an inbound message names as its origin, where a reply goes. */
    private final RdmaSession origin;
    /**
     * Every message's send request, filled afresh for each post: only the flow's one poster at a time fills it, and the
     * QP copies a request as it is posted.
     */
    private final WorkRequest sendRequest = new WorkRequest();

    SessionMessages(RdmaSession origin, SessionLink link, MessageReceives receives, Await await,
                    Duration requestTimeout, int window) {
        this.origin = origin;
        this.link = link;
        this.receives = receives;
        this.await = await;
        this.requestTimeout = requestTimeout;
        this.arena = origin.endpoint().arena();
        this.cq = origin.endpoint().cq();
        this.flow = new MessageFlow(origin, window, link.peerWindow());
    }

    int peerMaxMessageSize() {
        return link.peerMessageSize();
    }

    // ---- sending ---------------------------------------------------------------------------------------------

    CompletableFuture<WorkCompletion> send(Block message, int length, boolean withImmediate, int immediate) {
        if (!withImmediate) return post(message, length, -1, null);
        // The immediate is the frame's: the application's value follows the bytes, from a block of its own.
        checkFits(message, length, MessageFrame.TRAILER);
        Block trailer = arena.allocate(MessageFrame.TRAILER, MessageFrame.TRAILER);
        try {
            trailer.segment().set(TRAILER_VALUE, 0, immediate);
            trailer.handOff(); // closed where the send completes
            var sent = post(message, length, MessageFrame.word(MessageFrame.MESSAGE_WITH_IMMEDIATE, 0), trailer);
            sent.whenComplete((wc, e) -> trailer.close());
            return sent; // itself, not a stage after it: a withdrawal finds a waiting send by its future
        } catch (RuntimeException e) {
            trailer.close();
            throw e;
        }
    }

    /**
     * Posts the first {@code length} bytes of {@code message} through the flow, framed by {@code frame} in the
     * immediate unless it is -1, followed by {@code trailer}'s bytes if there is one.
     */
    private CompletableFuture<WorkCompletion> post(Block message, int length, int frame, Block trailer) {
        link.checkUsable();
        checkFits(message, length, trailer == null ? 0 : MessageFrame.TRAILER);
        return flow.send(() -> {
            var wr = sendRequest.reset().local(message.region(), message.regionOffset(), length);
            if (trailer != null) wr.local(trailer.region(), trailer.regionOffset(), MessageFrame.TRAILER);
            if (frame != -1) wr.opcode(Opcode.SEND_WITH_IMM).immediate(frame);
            return link.dataQp().postAsync(wr);
        });
    }

    private void checkFits(Block message, int length, int trailer) {
        if (length < 0 || length > message.size() || length > link.peerMessageSize() - trailer) {
            throw new IllegalArgumentException("a message of " + length + " bytes from " + message + " does not fit: the"
                    + " peer takes at most " + link.peerMessageSize() + " bytes per message"
                    + (trailer == 0 ? "" : ", " + trailer + " of them the immediate value"));
        }
    }

    /** Sends the whole block and waits until it is sent. */
    void sendAndWait(Block message, boolean withImmediate, int immediate) {
        CompletionDispatcher.checkMayWait(); // before the send: refused, it must not go out unreported
        awaitSent(send(message, (int) Math.min(Integer.MAX_VALUE, message.size()), withImmediate, immediate));
    }

    /**
     * Waits for a send at most the request timeout. One still waiting for credit then is withdrawn — never posted, its
     * block the caller's again; one already posted reads the block until its completion, so that is waited for.
     */
    private void awaitSent(CompletableFuture<WorkCompletion> sent) {
        try {
            await.within(() -> sent, requestTimeout, "the peer's credit", () -> flow.withdraw(sent));
        } catch (MooringTimeoutException e) {
            throw new FlowControlException("a send to " + link.peerAddress() + " waited " + requestTimeout
                    + " for the peer's credit: the peer takes no messages");
        }
    }

    // ---- calls -----------------------------------------------------------------------------------------------

    /**
     * Sends {@code request} as a call; the returned call's reply completes with the peer's reply once the request's
     * send has completed too. Giving the reply up (cancel, a timeout) frees the call's slot, withdraws the request if it
     * still waits for credit, and frees a reply that comes later.
     */
    PendingCalls.Call call(Block request, int length) {
        link.checkUsable();
        checkFits(request, length, 0);
        PendingCalls.Call call = calls.open(cq.newFuture());
        CompletableFuture<WorkCompletion> sent;
        try {
            sent = post(request, length, MessageFrame.word(MessageFrame.CALL, call.id()), null);
        } catch (RuntimeException e) {
            calls.forget(call);
            throw e;
        }
        sent.whenComplete((wc, e) -> {
            if (e == null) {
                call.sent().complete(wc);
            } else {
                call.sent().completeExceptionally(e);
                call.reply().completeExceptionally(e);
            }
        });
        call.reply().whenComplete((reply, e) -> {
            if (e == null) return;
            calls.forget(call);
            if (flow.withdraw(sent)) sent.cancel(false); // never posted: the request block is the caller's at once
        });
        return call;
    }

    /**
     * Calls and waits at most {@code timeout} for the reply. On a timeout the call is given up and, if its request was
     * posted, its send's completion awaited (bounded by the QP's retries) before this throws: the block is the caller's
     * again either way.
     */
    InboundMessage callAndWait(Block request, int length, Duration timeout) {
        CompletionDispatcher.checkMayWait(); // before the call: refused, it must not go out unanswered
        PendingCalls.Call call = call(request, length);
        try {
            return await.within(() -> call.reply(), timeout, "a reply");
        } catch (MooringTimeoutException e) {
            await.join(() -> call.sent().handle((wc, failure) -> null));
            throw new MooringTimeoutException("no reply to a call within " + timeout + "; the session goes on");
        }
    }

    /** Sends {@code reply} as the answer to the peer's call {@code id}. */
    CompletableFuture<WorkCompletion> reply(int id, Block reply, int length) {
        return post(reply, length, MessageFrame.word(MessageFrame.REPLY, id), null);
    }

    /** Replies with the whole block and waits until it is sent, as {@link #sendAndWait} does. */
    void replyAndWait(int id, Block reply) {
        awaitSent(reply(id, reply, (int) Math.min(Integer.MAX_VALUE, reply.size())));
    }

    /** Replies that came after their call gave up, or twice: freed on arrival. */
    long lateReplies() {
        return calls.lateReplies();
    }

    /** Posts a WRITE with immediate for {@link RemoteSegment}, spending a credit as a message does. */
    CompletableFuture<WorkCompletion> writeWithImm(WorkRequest write) {
        link.checkUsable();
        return flow.send(() -> link.dataQp().postAsync(write));
    }

    /** The peer returned credits (a CREDIT). */
    void credited(int messages) {
        flow.creditedByPeer(messages);
    }

    /** The application took {@code n} messages: tell the peer it may send that many more. */
    void grantCredits(int n) {
        if (link.isUp()) link.tell(new Message.Credit(link.nextRequestId(), n));
    }

    // ---- receiving -------------------------------------------------------------------------------------------

    CompletableFuture<InboundMessage> receive() {
        return flow.receive();
    }

    CompletableFuture<Integer> receiveWriteImm() {
        return flow.receiveWriteImm();
    }

    /** A completion of the data QP that no future claimed: a message, a reply, a notice, or a failure. */
    void onCompletion(WorkCompletion wc) {
        if (!wc.isSuccess()) {
            receives.repost((int) wc.wrId()); // flushed: the shared queue's block is still good
            link.lost("a data receive completed with " + wc.status());
            return;
        }
        try {
            if (wc.opcode() == WcOpcode.RECV_RDMA_WITH_IMM) { // the data went to a leased block; the buffer is unused
                receives.repost((int) wc.wrId());
                flow.noticed(wc.immediate());
            } else {
                received(receives.take(wc), wc.byteLength(), wc.hasImmediate() ? wc.immediate() : -1);
            }
        } catch (RuntimeException | OutOfMemoryError e) { // no block for the next receive (memlock)
            link.lost("receiving a message failed: " + e.getMessage());
        }
    }

    /** A SEND arrived in {@code block}: {@code frame} (-1 for none) says what it is ({@link MessageFrame}). */
    private void received(Block block, int length, int frame) {
        int kind = frame == -1 ? 0 : MessageFrame.kind(frame);
        int id = frame == -1 ? 0 : MessageFrame.id(frame);
        if (frame == -1) {
            flow.received(new InboundMessage(origin, block, length, false, 0, 0));
        } else if (kind == MessageFrame.MESSAGE_WITH_IMMEDIATE && id == 0 && length >= MessageFrame.TRAILER) {
            int data = length - MessageFrame.TRAILER; // read through the region: the block stays nobody's to hold
            int immediate = block.region().segment().get(TRAILER_VALUE, block.regionOffset() + data);
            flow.received(new InboundMessage(origin, block, data, true, immediate, 0));
        } else if (kind == MessageFrame.CALL && id != 0) {
            flow.received(new InboundMessage(origin, block, length, false, 0, id));
        } else if (kind == MessageFrame.REPLY) {
            flow.replied(new InboundMessage(origin, block, length, false, 0, 0), reply -> {
                if (!calls.replied(id, reply)) {
                    link.lost("the peer replied to call " + id + ", which this side never made");
                }
            });
        } else {
            block.close();
            link.lost("the peer sent a message with the malformed frame 0x" + Integer.toHexString(frame)
                    + (kind == MessageFrame.MESSAGE_WITH_IMMEDIATE ? " and " + length + " bytes" : ""));
        }
    }

    /** The peer sent past the {@code window} credits it was given: it breaks the protocol and loses the session. */
    void pastCredits(int window) {
        link.lost("the peer sent past its " + window + " credits");
    }

    /** The peer returned credits for messages this side never sent: it breaks the protocol and loses the session. */
    void pastWindow(int credits, int window) {
        link.lost("the peer returned " + credits + " credits, more than this side's messages it has not credited yet"
                + " (its window is " + window + ")");
    }

    // ---- ending ----------------------------------------------------------------------------------------------

    /** Messages and notices from the peer so far: what its goodbye is checked against. */
    long arrivals() {
        return flow.arrivals();
    }

    boolean holdsUntaken() {
        return flow.holdsUntaken();
    }

    /** This side is done, or the session broke; returns how many messages were posted (for the goodbye). */
    long end(String reason) {
        calls.end(new SessionLostException(reason));
        return flow.end(reason);
    }

    /** The peer ended the session cleanly: what it sent is still received, then the end. */
    void finish(String reason) {
        calls.end(new SessionLostException(reason));
        flow.finish(reason);
    }
}
