package io.mooring.lease;

import io.mooring.verbs.WorkCompletion;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * A session's application messages over its data QP, with credit-based flow control in both directions.
 *
 * <p>Receiving: messages arrive in blocks of the endpoint's shared receive queue ({@link MessageReceives}), handed
 * to the application as the very block the NIC wrote (no copy). The peer may have at most {@code window} messages
 * (and write-with-immediate notices) outstanding that the application has not taken: each take earns it a credit
 * back, returned in batches of half the window by a CREDIT control message. A peer that sends past its credits breaks
 * the protocol and loses the session. The endpoint keeps a window of receives posted per session, so its queue never
 * runs empty under well-behaved peers (no RNR storm), and nothing queues without bound however slow the application.
 *
 * <p>Sending: each SEND, SEND with immediate and WRITE with immediate spends one of the peer's credits. Without one
 * it waits in a queue of at most {@link #MAX_WAITING} requests (more are refused with
 * {@link FlowControlException}) until a CREDIT arrives.
 */
final class MessageFlow {
    /** Requests waiting for a credit, and application calls waiting for a message, at most. */
    static final int MAX_WAITING = 1024;

    /** A send that waits for a credit: {@code posting} posts it and completes {@code done}. */
    private record WaitingSend(CompletableFuture<WorkCompletion> done, Runnable posting) {}

    private final RdmaSession session;
    private final int window;
    private final int creditBatch;

    // guarded by this
    private final ArrayDeque<InboundMessage> messages = new ArrayDeque<>();
    private final ArrayDeque<Integer> writeNotices = new ArrayDeque<>();
    private final ArrayDeque<CompletableFuture<InboundMessage>> messageTakers = new ArrayDeque<>();
    private final ArrayDeque<CompletableFuture<Integer>> noticeTakers = new ArrayDeque<>();
    private final ArrayDeque<WaitingSend> waitingForCredit = new ArrayDeque<>();
    private int taken;   // messages and notices the application took since the last CREDIT
    private int credits; // what this side may still send to the peer
    private boolean closed;

    MessageFlow(RdmaSession session, int window, int peerWindow) {
        this.session = session;
        this.window = window;
        this.creditBatch = Math.max(1, window / 2);
        this.credits = peerWindow;
    }

    // ---- receiving -------------------------------------------------------------------------------------------

    /** A message arrived (from the dispatcher). */
    void received(InboundMessage m) {
        deliverMessage(m);
    }

    /** A WRITE with immediate arrived (from the dispatcher): its data is in place. */
    void noticed(int immediate) {
        deliverNotice(immediate);
    }

    private void deliverMessage(InboundMessage m) {
        if (!deliver(messages, messageTakers, m)) m.close();
    }

    private void deliverNotice(int immediate) {
        deliver(writeNotices, noticeTakers, immediate);
    }

    /**
     * Hands {@code item} to the oldest waiting taker, or queues it; false (nothing queued) if the peer sent past its
     * credits — then the session ends.
     */
    private <T> boolean deliver(ArrayDeque<T> queue, ArrayDeque<CompletableFuture<T>> takers, T item) {
        while (true) {
            CompletableFuture<T> taker;
            synchronized (this) {
                taker = takers.poll();
                if (taker == null && messages.size() + writeNotices.size() < window) {
                    queue.add(item);
                    return true;
                }
            }
            if (taker == null) {
                session.pastCredits(window); // outside this lock: ending the session takes the session's
                return false;
            }
            if (taker.complete(item)) { // else the taker gave up meanwhile: the next one gets it
                took();
                return true;
            }
        }
    }

    CompletableFuture<InboundMessage> receive() {
        return take(messages, messageTakers);
    }

    CompletableFuture<Integer> receiveWriteImm() {
        return take(writeNotices, noticeTakers);
    }

    /** The oldest queued item, or a future for the next one. */
    private <T> CompletableFuture<T> take(ArrayDeque<T> queue, ArrayDeque<CompletableFuture<T>> takers) {
        T item;
        synchronized (this) {
            checkOpen();
            item = queue.poll();
            if (item == null) return waitFor(takers);
        }
        took();
        return CompletableFuture.completedFuture(item);
    }

    private <T> CompletableFuture<T> waitFor(ArrayDeque<CompletableFuture<T>> takers) {
        takers.removeIf(CompletableFuture::isDone); // given up (timed out, cancelled)
        if (takers.size() >= MAX_WAITING) {
            throw new FlowControlException(MAX_WAITING + " receives are already waiting on this session");
        }
        var f = new CompletableFuture<T>();
        takers.add(f);
        return f;
    }

    /** The application took a message or notice: the peer earns a credit, returned in batches. */
    private void took() {
        int returned;
        synchronized (this) {
            if (++taken < creditBatch) return;
            returned = taken;
            taken = 0;
        }
        session.grantCredits(returned);
    }

    // ---- sending ---------------------------------------------------------------------------------------------

    /**
     * Posts {@code post} once a credit is available: now, or when the peer returns one. The future completes with the
     * send's completion.
     */
    CompletableFuture<WorkCompletion> send(Supplier<CompletableFuture<WorkCompletion>> post) {
        var done = new CompletableFuture<WorkCompletion>();
        Runnable posting = () -> {
            if (done.isDone()) { // the caller gave up while it waited: its credit goes to the next one
                credited(1);
                return;
            }
            try {
                post.get().whenComplete((wc, e) -> {
                    if (e != null) done.completeExceptionally(e);
                    else done.complete(wc);
                });
            } catch (RuntimeException e) {
                done.completeExceptionally(e);
            }
        };
        synchronized (this) {
            checkOpen();
            if (credits == 0) {
                if (waitingForCredit.size() >= MAX_WAITING) {
                    throw new FlowControlException(MAX_WAITING + " messages already wait for credit from the peer");
                }
                waitingForCredit.add(new WaitingSend(done, posting));
                return done;
            }
            credits--;
        }
        posting.run();
        return done;
    }

    /** The peer returned {@code n} credits: waiting sends go out. */
    void credited(int n) {
        List<Runnable> ready = new ArrayList<>();
        synchronized (this) {
            credits += n;
            while (credits > 0 && !waitingForCredit.isEmpty()) {
                credits--;
                ready.add(waitingForCredit.poll().posting());
            }
        }
        ready.forEach(Runnable::run);
    }

    /** Credits this side holds now. */
    synchronized int credits() {
        return credits;
    }

    private void checkOpen() {
        if (closed) throw new SessionLostException("the session has ended");
    }

    // ---- ending ----------------------------------------------------------------------------------------------

    /** Fails whoever waits and frees what the application never took. */
    void end(String reason) {
        List<CompletableFuture<?>> waiting = new ArrayList<>();
        List<InboundMessage> untaken;
        synchronized (this) {
            if (closed) return;
            closed = true;
            waiting.addAll(messageTakers);
            waiting.addAll(noticeTakers);
            waitingForCredit.forEach(w -> waiting.add(w.done()));
            messageTakers.clear();
            noticeTakers.clear();
            waitingForCredit.clear();
            untaken = List.copyOf(messages);
            messages.clear();
            writeNotices.clear();
        }
        untaken.forEach(InboundMessage::close);
        waiting.forEach(f -> f.completeExceptionally(new SessionLostException(reason)));
    }

}
