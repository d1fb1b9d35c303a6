package io.mooring.lease;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * Hands items from the side that makes them (a listener, a session's agent) to an application that may ask before
 * they exist: a queue of at most {@code capacity} items nobody has asked for yet, and at most {@code capacity} callers
 * waiting for the next one. Bounded both ways, so neither a peer nor the application can make it grow.
 */
final class Handoff<T> {
    private final int capacity;
    private final String what;
    private final Supplier<CompletableFuture<T>> futures;
    private final Runnable onTaken;
    // Small at first, grown as used: a session has three of these, mostly idle (the default holds 16 at once).
    private final ArrayDeque<T> items = new ArrayDeque<>(1);                      // guarded by this
    private final ArrayDeque<CompletableFuture<T>> takers = new ArrayDeque<>(1);  // guarded by this
    private RuntimeException closed;                                             // guarded by this

    Handoff(int capacity, String what) {
        this(capacity, what, CompletableFuture::new, () -> { });
    }

    /**
     * @param futures makes the future of a taker who asks before its item exists: a completion queue's, when items
     *                come from its completions (a blocking wait on it then polls for itself)
     * @param onTaken runs once per item the application gets (message flow returns a credit for it)
     */
    Handoff(int capacity, String what, Supplier<CompletableFuture<T>> futures, Runnable onTaken) {
        this.capacity = capacity;
        this.what = what;
        this.futures = futures;
        this.onTaken = onTaken;
    }

    /** Gives {@code item} to the oldest waiting taker, or queues it; false if the queue is full or closed. */
    boolean offer(T item) {
        while (true) {
            CompletableFuture<T> taker;
            synchronized (this) {
                if (closed != null) return false;
                taker = takers.poll();
                if (taker == null) {
                    if (items.size() >= capacity) return false;
                    items.add(item);
                    return true;
                }
            }
            if (taker.complete(item)) { // else it gave up (timed out, cancelled): the next one gets it
                onTaken.run();
                return true;
            }
        }
    }

    /**
     * The oldest item, or a future for the next one.
     *
     * @throws FlowControlException if {@code capacity} callers already wait
     */
    CompletableFuture<T> take() {
        T item;
        synchronized (this) {
            item = items.poll();
            if (item == null) {
                if (closed != null) return CompletableFuture.failedFuture(closed);
                takers.removeIf(CompletableFuture::isDone);
                if (takers.size() >= capacity) {
                    throw new FlowControlException(capacity + " callers already wait for " + what);
                }
                CompletableFuture<T> f = futures.get();
                takers.add(f);
                return f;
            }
        }
        onTaken.run();
        return CompletableFuture.completedFuture(item);
    }

    synchronized boolean isEmpty() {
        return items.isEmpty();
    }

    /**
     * No more items come: waiting callers fail with {@code why}; the items queued are still taken, and after them every
     * take fails with {@code why} — the end of a stream, after its data.
     */
    void finish(RuntimeException why) {
        end(why, false);
    }

    /**
     * Refuses everything from now on, also after {@link #finish}: waiting callers fail with {@code why} (or what
     * finished it); returns the items nobody took.
     */
    List<T> close(RuntimeException why) {
        return end(why, true);
    }

    private List<T> end(RuntimeException why, boolean dropItems) {
        List<T> untaken = new ArrayList<>();
        List<CompletableFuture<T>> waiting;
        RuntimeException reason;
        synchronized (this) {
            if (closed == null) closed = why;
            reason = closed;
            if (dropItems) {
                untaken.addAll(items);
                items.clear();
            }
            waiting = new ArrayList<>(takers);
            takers.clear();
        }
        waiting.forEach(f -> f.completeExceptionally(reason));
        return untaken;
    }
}
