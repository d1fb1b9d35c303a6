package io.mooring.lease;

import io.mooring.verbs.WorkCompletion;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * A session's application messages over its data QP, with credit-based flow control in both directions.
 *
 * <p>Receiving: messages arrive in blocks of the endpoint's shared receive queue ({@link MessageReceives}), handed
 * to the application as the very block the NIC wrote (no copy). The peer may send {@code window} messages (and
 * write-with-immediate notices) plus one per credit returned; every message the application takes earns a credit,
 * returned in batches of half the window by a CREDIT control message. A peer that sends past its credits breaks the
 * protocol and loses the session. The endpoint keeps a window of receives posted per session, so its queue never runs
 * empty under well-behaved peers (no RNR storm), and nothing queues without bound however slow the application.
 *
 * <p>Replies to this side's calls are received the same way, but taken at once (by their caller, or freed).
 *
 * <p>Sending: each SEND, SEND with immediate and WRITE with immediate spends one of the peer's credits. Without one
 * it waits in a queue of at most {@link #MAX_WAITING} requests (more are refused with
 * {@link FlowControlException}) until a CREDIT arrives. Sends are posted in the order they entered {@link #send} (its
 * lock is the point that orders calls from several threads): one thread at a time posts — the caller that found a
 * credit and nobody posting, or the dispatcher a CREDIT finds with sends waiting — and it posts the queue's head
 * outside the lock, then the next while credits last, so a send that finds a credit never overtakes one that waits.
 */
final class MessageFlow {
    /** Requests waiting for a credit, and application calls waiting for a message, at most. */
    static final int MAX_WAITING = 1024;

    /** A send that waits for a credit: {@code post} posts it, and its completion completes {@code done}. */
    private record WaitingSend(CompletableFuture<WorkCompletion> done, Supplier<CompletableFuture<WorkCompletion>> post) {}

    private final RdmaSession session;
    private final int window;
    private final int creditBatch;
    /** The messages the peer takes ahead of returning credit: this side's credits never exceed it. */
    private final int peerWindow;
    private final Handoff<InboundMessage> messages;
    private final Handoff<Integer> notices;

    // guarded by this
    private final ArrayDeque<WaitingSend> waiting = new ArrayDeque<>(2); // sends not posted yet, in call order
    private boolean posting; // a thread posts now, the only one: with credits left, waiting is empty otherwise
    private long arrived;  // messages and notices the peer sent
    private long returned; // credits returned to the peer
    private int taken;     // messages and notices the application took since the last CREDIT
    private int credits;   // what this side may still send to the peer
    private long posted;   // messages and notices posted to the peer (counted with the credit they take)
    private boolean closed;
    /** Messages and notices from the peer handed to the application's queues: what its goodbye is checked against. */
    private final AtomicLong delivered = new AtomicLong();

    MessageFlow(RdmaSession session, int window, int peerWindow) {
        this.session = session;
        this.window = window;
        this.creditBatch = Math.max(1, window / 2);
        this.credits = peerWindow;
        this.peerWindow = peerWindow;
        // Never more than the window is queued (arrivals past the credits end the session); the rest bounds takers.
        int capacity = Math.max(MAX_WAITING, window);
        var cq = session.endpoint().cq();
        this.messages = new Handoff<>(capacity, "a message", cq::newFuture, this::took);
        this.notices = new Handoff<>(capacity, "a write with immediate", cq::newFuture, this::took);
    }

    // ---- receiving -------------------------------------------------------------------------------------------

    /** A message arrived (from the dispatcher); the application owns it once taken. */
    void received(InboundMessage m) {
        if (!admit() || !messages.offer(m)) m.close(); // past its credits, or the session ended
        delivered.incrementAndGet();
    }

    /**
     * A reply to one of this side's calls arrived (from the dispatcher): {@code deliver} hands it to its call. It is
     * taken at once — by its caller, or freed if nobody waits — so its credit goes back as a taken message's does.
     */
    void replied(InboundMessage reply, Consumer<InboundMessage> deliver) {
        if (admit()) {
            deliver.accept(reply);
            took();
        } else {
            reply.close();
        }
        delivered.incrementAndGet();
    }

    /** A WRITE with immediate arrived (from the dispatcher): its data is in place. */
    void noticed(int immediate) {
        if (admit()) notices.offer(immediate);
        delivered.incrementAndGet();
    }

    /** Messages and notices from the peer so far, handed to the application's queues (or refused, if past credits). */
    long arrivals() {
        return delivered.get();
    }

    /** Whether messages wait that the application has not taken (after a peer's end, until {@link #end}). */
    boolean holdsUntaken() {
        return !messages.isEmpty();
    }

    /** Counts an arrival; false, and the session is lost, if the peer sent past its credits. */
    private boolean admit() {
        synchronized (this) {
            if (++arrived <= window + returned) return true;
        }
        session.pastCredits(window); // outside this lock: ending the session takes the session's
        return false;
    }

    CompletableFuture<InboundMessage> receive() {
        return messages.take();
    }

    CompletableFuture<Integer> receiveWriteImm() {
        return notices.take();
    }

    /** The application took a message or notice: the peer earns a credit, returned in batches. */
    private void took() {
        int n = 0;
        synchronized (this) {
            if (!closed) {
                if (++taken < creditBatch) return;
                n = taken;
                taken = 0;
                returned += n;
            }
        }
        if (n > 0) session.grantCredits(n);
        else if (!holdsUntaken()) session.endpoint().registry().messagesTaken(session); // the last one kept after the end
    }

    // ---- sending ---------------------------------------------------------------------------------------------

    /**
     * Posts with {@code post} once a credit is available and every send called before it is posted: now, by this
     * caller — the post's own future is returned, and what it throws is thrown — or later, by whoever posts then.
     */
    CompletableFuture<WorkCompletion> send(Supplier<CompletableFuture<WorkCompletion>> post) {
        synchronized (this) {
            if (closed) throw new SessionLostException("the session has ended");
            if (posting || credits == 0) {
                if (waiting.size() >= MAX_WAITING) {
                    throw new FlowControlException(MAX_WAITING + " messages already wait for credit from the peer");
                }
                CompletableFuture<WorkCompletion> done = session.endpoint().cq().newFuture();
                waiting.add(new WaitingSend(done, post));
                return done;
            }
            credits--;
            posted++;
            posting = true;
        }
        try {
            return postWithCredit(post);
        } finally {
            postWaiting(); // what other threads queued meanwhile
        }
    }

    /**
     * Takes a send that still waits off the queue, so that it is never posted: false if it is not waiting (it was
     * posted, or is being posted now — then its block is in use until it completes).
     */
    synchronized boolean withdraw(CompletableFuture<WorkCompletion> done) {
        return waiting.removeIf(w -> w.done() == done);
    }

    /** Posts with a credit in hand; a post that is refused gives the credit back. */
    private CompletableFuture<WorkCompletion> postWithCredit(Supplier<CompletableFuture<WorkCompletion>> post) {
        try {
            return post.get();
        } catch (RuntimeException e) {
            synchronized (this) {
                posted--;
                credits++; // the poster goes on with it
            }
            throw e;
        }
    }

    /**
     * The peer returned {@code n} credits (a CREDIT): waiting sends go out. An honest peer returns one per message it
     * took, so this side's credits never exceed the window the peer offered; past it the peer breaks the protocol (and
     * would overflow the count), and loses the session.
     */
    void creditedByPeer(int n) {
        boolean excess;
        synchronized (this) {
            excess = (long) credits + n > peerWindow;
            if (!excess) {
                credits += n;
                if (posting || waiting.isEmpty()) return;
                posting = true;
            }
        }
        if (excess) session.pastWindow(n, peerWindow); // outside this lock: ending the session takes the session's
        else postWaiting();
    }

    /** Posts the waiting sends in order while credits last: the caller is the poster ({@link #posting}) until then. */
    private void postWaiting() {
        while (true) {
            WaitingSend w;
            synchronized (this) {
                w = closed ? null : nextWithCredit();
                if (w == null) {
                    posting = false;
                    return;
                }
            }
            try {
                postWithCredit(w.post()).whenComplete((wc, e) -> {
                    if (e != null) w.done().completeExceptionally(e);
                    else w.done().complete(wc);
                });
            } catch (RuntimeException e) {
                w.done().completeExceptionally(e);
            }
        }
    }

    /** The oldest waiting send, with the credit it spends taken; null if none or no credit (caller holds the lock). */
    private WaitingSend nextWithCredit() {
        while (credits > 0 && !waiting.isEmpty()) {
            WaitingSend w = waiting.poll();
            if (w.done().isDone()) continue; // the caller gave up while it waited: the credit goes on
            credits--;
            posted++;
            return w;
        }
        return null;
    }

    // ---- ending ----------------------------------------------------------------------------------------------

    /**
     * This side is done, or the session broke: fails whoever waits and frees what the application never took.
     *
     * @return how many messages and notices were posted to the peer: what this side's goodbye tells it to expect
     */
    long end(String reason) {
        var lost = new SessionLostException(reason);
        stopSending(lost);
        messages.close(lost).forEach(InboundMessage::close);
        notices.close(lost);
        synchronized (this) {
            return posted;
        }
    }

    /**
     * The peer ended the session cleanly, after every message it sent had arrived: those the application has not taken
     * yet are still received — then {@code reason}, as for whoever waits now — until {@link #end} frees the rest.
     */
    void finish(String reason) {
        var ended = new SessionLostException(reason);
        stopSending(ended);
        messages.finish(ended);
        notices.finish(ended);
    }

    private void stopSending(SessionLostException why) {
        List<WaitingSend> left;
        synchronized (this) {
            closed = true;
            left = List.copyOf(waiting);
            waiting.clear();
        }
        left.forEach(w -> w.done().completeExceptionally(why));
    }
}
