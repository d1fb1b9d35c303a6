package io.mooring.lease;

import io.mooring.verbs.WorkCompletion;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A session's calls waiting for their replies, by id ({@link MessageFrame}): at most {@value #MAX_OUTSTANDING}, so a
 * peer that never replies costs a bounded table. A reply goes to the call that carries its id and to no other; its
 * caller gets it once the request's SEND has completed too, so the request block is the caller's again by then. A call
 * given up (cancelled, timed out) leaves the table at once; a reply that arrives for it later — or a second one — is
 * freed and counted ({@link #lateReplies()}). A reply to an id this side never issued is the peer's fault: the caller
 * of {@link #replied} ends the session.
 */
final class PendingCalls {
    /** Calls a session has waiting for their replies, at most. */
    static final int MAX_OUTSTANDING = 1024;

    /** A call: its reply's future, and its request's send, done when the request block is the caller's again. */
    record Call(int id, CompletableFuture<InboundMessage> reply, CompletableFuture<WorkCompletion> sent) {}

    private final Map<Integer, Call> calls = new HashMap<>(); // guarded by this
    private long issued;                                      // ids handed out so far, guarded by this
    private RuntimeException ended;                           // guarded by this
    private final AtomicLong lateReplies = new AtomicLong();

    /**
     * Enters a call under a fresh id, its {@code reply} to be completed by the peer's reply.
     *
     * @throws FlowControlException if {@value #MAX_OUTSTANDING} calls already wait for replies
     * @throws SessionLostException if the session has ended
     */
    synchronized Call open(CompletableFuture<InboundMessage> reply) {
        if (ended != null) throw new SessionLostException(ended.getMessage());
        if (calls.size() >= MAX_OUTSTANDING) {
            throw new FlowControlException(MAX_OUTSTANDING + " calls already wait for the peer's replies");
        }
        int id;
        do {
            id = (int) (issued++ % MessageFrame.MAX_ID) + 1;
        } while (calls.containsKey(id)); // after a wrap: an id still waiting is never handed out twice
        var call = new Call(id, reply, new CompletableFuture<>());
        calls.put(id, call);
        return call;
    }

    /** The call gave up or failed: its id leaves the table, and a reply for it is late. */
    synchronized void forget(Call call) {
        calls.remove(call.id(), call);
    }

    /**
     * A reply to call {@code id} arrived (from the dispatcher): it goes to that call — once the request's send has
     * completed — or, if the call gave up, it is freed and counted.
     *
     * @return false if this side never issued {@code id}: the peer breaks the protocol ({@code reply} is freed)
     */
    boolean replied(int id, InboundMessage reply) {
        Call call;
        synchronized (this) {
            call = calls.remove(id);
            if (call == null && (id == 0 || issued < MessageFrame.MAX_ID && id > issued)) {
                reply.close();
                return false;
            }
        }
        if (call == null) {
            late(reply);
        } else {
            call.sent().whenComplete((wc, e) -> {
                if (!call.reply().complete(reply)) late(reply); // it gave up meanwhile
            });
        }
        return true;
    }

    private void late(InboundMessage reply) {
        reply.close();
        lateReplies.incrementAndGet();
    }

    /** Replies that arrived for calls that had given up, or twice: freed on arrival. */
    long lateReplies() {
        return lateReplies.get();
    }

    /** The session ended: every waiting call fails with {@code why}, and no call is made from now on. */
    void end(RuntimeException why) {
        List<Call> left;
        synchronized (this) {
            if (ended == null) ended = why;
            left = new ArrayList<>(calls.values());
            calls.clear();
        }
        left.forEach(c -> c.reply().completeExceptionally(why));
    }
}
