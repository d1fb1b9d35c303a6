package io.mooring.verbs;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A future whose blocking waits — {@code get}, {@code join}, on it or on any stage derived from it — go through its
 * completion queue's {@link CompletionQueue#await}: a platform thread polls for its own completion, as the library's
 * blocking forms do, instead of parking until a dispatcher that stands aside for such callers comes round. Plain
 * {@code future.get()} in an application is then as quick as the blocking form, and is refused, as they are, where
 * completions are delivered.
 */
final class CompletionFuture<T> extends CompletableFuture<T> {
    /** Waits this long or longer (146 years) are waits without bound. */
    private static final long UNBOUNDED_NANOS = Long.MAX_VALUE / 2;

    private final CompletionQueue cq;

    CompletionFuture(CompletionQueue cq) {
        this.cq = cq;
    }

    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
        return new CompletionFuture<>(cq);
    }

    @Override
    public T get() throws InterruptedException, ExecutionException {
        awaitDone(Long.MAX_VALUE);
        return super.get();
    }

    @Override
    public T get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
        if (!cq.awaitNanos(this, unit.toNanos(timeout))) {
            throw new TimeoutException("not done within " + timeout + " " + unit);
        }
        return super.get();
    }

    @Override
    public T join() {
        try {
            awaitDone(Long.MAX_VALUE);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // join is not interruptible: kept for later, as CompletableFuture does
        }
        return super.join();
    }

    /**
     * The plain parked wait, for {@link CompletionDispatcher#parkUntilDone} once polling is not for this caller. A wait
     * without bound ({@link CompletionQueue#FOREVER}, less what the caller spent polling) parks without a timeout: a
     * virtual thread's timed park schedules, and then cancels, a timer task for its wake-up — per blocking READ.
     */
    void parkUntilDone(long timeoutNanos) throws InterruptedException, ExecutionException, TimeoutException {
        if (timeoutNanos >= UNBOUNDED_NANOS) {
            super.get();
        } else {
            super.get(timeoutNanos, TimeUnit.NANOSECONDS);
        }
    }

    private void awaitDone(long timeoutNanos) throws InterruptedException {
        if (!isDone()) cq.awaitNanos(this, timeoutNanos);
    }
}
