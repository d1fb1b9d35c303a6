package io.mooring.lease;

import io.mooring.lifecycle.MooringTimeoutException;
import io.mooring.verbs.CompletionDispatcher;
import io.mooring.verbs.CompletionQueue;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * How the blocking forms wait for their async twins: through their completion queue, whose dispatcher lets a waiting
 * platform thread poll for its own completion (one wake-up, not two); they throw what the future fails with,
 * unwrapped. A wait where completions are delivered is refused ({@link CompletionDispatcher#checkMayWait()}) before
 * the work is started: callbacks chained on the async forms run there, and a wait there would wait for a completion
 * only that thread can deliver — a deadlock until some timeout, for every session of the endpoint — while work
 * started anyway would go on without its caller (a receive taking the next message, a write landing unreported).
 */
final class Await {
    private final CompletionQueue cq;

    /** Waits for requests whose completions {@code cq} takes. */
    Await(CompletionQueue cq) {
        this.cq = cq;
    }

    /**
     * Starts {@code work} and waits for it without a bound (its own timeouts end it); an interrupt is kept for later,
     * as join does.
     */
    <T> T join(Supplier<CompletableFuture<T>> work) {
        CompletionDispatcher.checkMayWait();
        return join(work.get());
    }

    private <T> T join(CompletableFuture<T> f) {
        if (!f.isDone()) {
            try {
                cq.await(f, CompletionQueue.FOREVER);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try {
            return f.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw e;
        }
    }

    /**
     * Starts {@code work} and waits for it — {@code what} the caller waits for — at most {@code timeout}; cancels it
     * if the wait ends first. If it completes between the wait's end and the cancel, its outcome is returned (or
     * thrown) after all: it may hold what only this caller can take (a received message, a sent message's completion).
     *
     * @throws MooringTimeoutException naming {@code what} and the timeout
     */
    <T> T within(Supplier<CompletableFuture<T>> work, Duration timeout, String what) {
        return within(work, timeout, what, () -> true);
    }

    /**
     * {@link #within(Supplier, Duration, String)} for work that may be under way when the wait ends: then
     * {@code withdraw} says whether it could still be called off (it was not started, and now never is) — else the
     * work holds the caller's memory until it completes, so this waits for that, without bound (its own timeouts end
     * it), instead of throwing.
     */
    <T> T within(Supplier<CompletableFuture<T>> work, Duration timeout, String what, BooleanSupplier withdraw) {
        CompletionDispatcher.checkMayWait();
        CompletableFuture<T> f = work.get();
        if (!f.isDone()) {
            try {
                if (!cq.await(f, timeout) && withdraw.getAsBoolean() && f.cancel(false)) {
                    throw new MooringTimeoutException(what + " did not come within " + timeout);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                if (withdraw.getAsBoolean() && f.cancel(false)) {
                    throw new IllegalStateException("interrupted while waiting for the peer", e);
                }
            }
        }
        if (!f.isDone()) join(f); // under way, and not to be abandoned: its outcome is read below
        try {
            return f.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw new IllegalStateException(e.getCause());
        }
    }

    /**
     * Checks {@code done} every millisecond until it holds or {@code bound} has passed, for what no future signals (a
     * QP's outstanding requests, a peer's messages yet to be polled); an interrupt ends the wait early and is kept.
     *
     * @return whether {@code done} holds
     */
    static boolean polling(BooleanSupplier done, Duration bound) {
        long deadline = System.nanoTime() + bound.toNanos();
        try {
            while (!done.getAsBoolean()) {
                if (System.nanoTime() - deadline > 0) return false;
                Thread.sleep(1);
            }
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return done.getAsBoolean();
        }
    }
}
