package io.mooring.lease;

import io.mooring.verbs.CompletionDispatcher;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * How the blocking forms wait for their async twins: they throw what the future fails with, unwrapped, and refuse to
 * wait on a completion dispatcher's thread. Callbacks chained on the async forms run there; a wait there would wait
 * for a completion only that thread can deliver — a deadlock until some timeout, for every session of the endpoint.
 */
final class Await {
    private Await() {}

    /** Waits for {@code f} without a bound (its own timeouts end it). */
    static <T> T join(CompletableFuture<T> f) {
        if (!f.isDone()) checkMayWait();
        try {
            return f.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw e;
        }
    }

    /** Waits for {@code f} at most {@code timeout}; cancels it if the wait ends first. */
    static <T> T within(CompletableFuture<T> f, Duration timeout) throws TimeoutException {
        if (!f.isDone()) checkMayWait();
        try {
            return f.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException r) throw r;
            throw new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            f.cancel(false);
            throw new IllegalStateException("interrupted while waiting for the peer", e);
        } catch (TimeoutException e) {
            f.cancel(false);
            throw e;
        }
    }

    /** Refuses a wait on a dispatcher's thread (see the class comment). */
    static void checkMayWait() {
        if (CompletionDispatcher.isDispatcherThread()) {
            throw new WrongThreadException(Thread.currentThread().getName() + " delivers completions: a blocking call"
                    + " here would wait for itself. Use the async form (and chain on its future) in callbacks");
        }
    }
}
