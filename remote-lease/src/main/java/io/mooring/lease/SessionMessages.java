package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.verbs.values.Opcode;
import io.mooring.verbs.values.WcOpcode;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;

/**
 * The application's messages on a session's data QP: checks a send against the peer's message size and posts it
 * through the session's {@link MessageFlow} (credits, order), turns the data QP's receive completions into
 * {@link InboundMessage}s and write-with-immediate notices, and ends the session when the peer breaks the credit rules.
 */
final class SessionMessages {
    private final SessionLink link;
    private final MessageFlow flow;
    private final MessageReceives receives;
    private final Await await;
    private final Duration requestTimeout;
    /** The session an inbound message names as its origin, where a reply goes. */
    private final RdmaSession origin;

    SessionMessages(RdmaSession origin, SessionLink link, MessageReceives receives, Await await,
                    Duration requestTimeout, int window) {
        this.origin = origin;
        this.link = link;
        this.receives = receives;
        this.await = await;
        this.requestTimeout = requestTimeout;
        this.flow = new MessageFlow(origin, window, link.peerWindow());
    }

    int peerMaxMessageSize() {
        return link.peerMessageSize();
    }

    // ---- sending ---------------------------------------------------------------------------------------------

    CompletableFuture<WorkCompletion> send(Block message, int length, boolean withImmediate, int immediate) {
        link.checkUsable();
        if (length < 0 || length > message.size() || length > link.peerMessageSize()) {
            throw new IllegalArgumentException("a message of " + length + " bytes from " + message + " does not fit: the"
                    + " peer takes at most " + link.peerMessageSize() + " bytes per message");
        }
        return flow.send(() -> {
            var wr = WorkRequest.send(message.region(), message.regionOffset(), length);
            if (withImmediate) wr.opcode(Opcode.SEND_WITH_IMM).immediate(immediate);
            return link.dataQp().postAsync(wr);
        });
    }

    /** Sends the whole block and waits until it is sent. */
    void sendAndWait(Block message, boolean withImmediate, int immediate) {
        awaitSent(send(message, (int) Math.min(Integer.MAX_VALUE, message.size()), withImmediate, immediate));
    }

    /**
     * Waits for a send at most the request timeout. One still waiting for credit then is withdrawn — never posted, its
     * block the caller's again; one already posted reads the block until its completion, so that is waited for.
     */
    private void awaitSent(CompletableFuture<WorkCompletion> sent) {
        try {
            await.within(sent, requestTimeout, () -> flow.withdraw(sent));
        } catch (TimeoutException e) {
            throw new FlowControlException("a send to " + link.peerAddress() + " waited " + requestTimeout
                    + " for the peer's credit: the peer takes no messages");
        }
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

    /** A completion of the data QP that no future claimed: a message, a notice, or a failure. */
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
                boolean withImmediate = wc.hasImmediate();
                flow.received(new InboundMessage(origin, receives.take(wc), wc.byteLength(), withImmediate,
                        withImmediate ? wc.immediate() : 0));
            }
        } catch (RuntimeException | OutOfMemoryError e) { // no block for the next receive (memlock)
            link.lost("receiving a message failed: " + e.getMessage());
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
        return flow.end(reason);
    }

    /** The peer ended the session cleanly: what it sent is still received, then the end. */
    void finish(String reason) {
        flow.finish(reason);
    }
}
