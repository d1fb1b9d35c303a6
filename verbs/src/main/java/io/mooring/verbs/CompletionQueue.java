package io.mooring.verbs;

import io.mooring.lifecycle.Resource;
import io.mooring.verbs.spi.CqOps;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * A completion queue ({@code struct ibv_cq}) with its completion channel. Poll it yourself
 * ({@link #poll}, {@link #poll(WorkCompletion[], Duration)}) or let a {@link CompletionDispatcher} do it;
 * either way, completions of requests posted with {@code postAsync} complete their futures instead of being
 * returned.
 */
public final class CompletionQueue extends VerbsObject {
    /** A timeout for {@link #await} that never runs out ({@code Long.MAX_VALUE} nanoseconds, or longer). */
    public static final Duration FOREVER = Duration.ofNanos(Long.MAX_VALUE);
    private final DeviceContext context;
    private final CompletionRouter router;
    private final int capacity;
    private final DispatcherSlot dispatcher;

    /** The running dispatcher, if any; outside the handle so the CQ's destroy action can stop it. */
    static final class DispatcherSlot {
        volatile CompletionDispatcher running;

        void stop() {
            CompletionDispatcher d = running;
            if (d != null) d.close();
        }

        /** Lets go of the CQ if {@code d} holds it: not of a dispatcher started after {@code d} failed. */
        synchronized void release(CompletionDispatcher d) {
            if (running == d) running = null;
        }
    }

    CompletionQueue(DeviceContext context, CqOps ops, Resource resource, int capacity, DispatcherSlot dispatcher) {
        super(resource);
        this.context = context;
        this.router = new CompletionRouter(ops, resource.info().name(), context.queuePairs, context.sharedQueues);
        this.capacity = capacity;
        this.dispatcher = dispatcher;
    }

    public DeviceContext context() {
        return context;
    }

    public int capacity() {
        return capacity;
    }

    /**
     * Moves up to {@code into.length} completions into the caller's instances; returns how many. Never blocks.
     *
     * @throws IllegalStateException if a dispatcher polls this CQ
     * @throws IllegalArgumentException if an element of {@code into} is null (nothing is taken then)
     */
    public int poll(WorkCompletion[] into) {
        checkPollable(into);
        return router.poll(into);
    }

    /**
     * Like {@link #poll(WorkCompletion[])}, but if nothing is there sleeps on completion events (no spinning)
     * until a completion for the caller comes or {@code timeout} has elapsed; returns 0 only in the latter case
     * (completions that complete futures do not end the wait).
     */
    public int poll(WorkCompletion[] into, Duration timeout) throws InterruptedException {
        checkPollable(into);
        return router.pollWaiting(into, timeout.toNanos());
    }

    /**
     * Refuses a poll before it takes anything: a completion taken for an empty slot of {@code into} would be retired
     * and lost.
     */
    private void checkPollable(WorkCompletion[] into) {
        resource.checkOpen();
        if (dispatcher.running != null) {
            throw new IllegalStateException(this + " is polled by its dispatcher; stop it before polling by hand");
        }
        for (int i = 0; i < into.length; i++) {
            if (into[i] == null) {
                throw new IllegalArgumentException("into[" + i + "] is null: a poll fills the caller's WorkCompletion"
                        + " instances; fill the array with them once and reuse it");
            }
        }
    }

    /**
     * Starts a thread that polls this CQ, completing futures and handing every other completion to
     * {@code handler} (on the dispatcher thread). It stops when closed or when the CQ is destroyed; or when polling
     * fails (an overrun CQ fails every poll with EIO), and then fails the requests waiting on the CQ's QPs.
     *
     * @throws IllegalStateException if one is already running
     */
    public synchronized CompletionDispatcher startDispatcher(CompletionDispatcher.Mode mode,
                                                             Consumer<WorkCompletion> handler) {
        resource.checkOpen();
        if (dispatcher.running != null) throw new IllegalStateException(this + " already has a dispatcher");
        CompletionDispatcher d = new CompletionDispatcher(router, mode, handler, dispatcher);
        dispatcher.running = d;
        d.start();
        return d;
    }

    /**
     * A future to be completed by work whose completions this queue takes (the {@code postAsync} of its QPs make
     * theirs so). A blocking {@code get} or {@code join} on it, or on any stage derived from it, waits as
     * {@link #await} does — a platform thread polls for its own completion — and throws {@link WrongThreadException}
     * where completions are delivered, where a plain future's would wait for itself.
     */
    public <T> CompletableFuture<T> newFuture() {
        return new CompletionFuture<>(this);
    }

    /**
     * Waits until {@code f} — the future of a request on a QP of this CQ — is done, or {@code timeout} has passed
     * ({@link #FOREVER}: without bound). With a dispatcher in EVENTS mode a platform thread polls for its own
     * completion while it waits ({@link CompletionDispatcher#await}); otherwise it parks until the completion is
     * delivered.
     *
     * @return whether {@code f} is done: false if the time ran out first
     * @throws WrongThreadException where completions are delivered ({@link CompletionDispatcher#checkMayWait()})
     */
    public boolean await(CompletableFuture<?> f, Duration timeout) throws InterruptedException {
        return awaitNanos(f, timeout.compareTo(FOREVER) >= 0 ? Long.MAX_VALUE : Math.max(0, timeout.toNanos()));
    }

    /** {@link #await} in nanoseconds, for the futures' own waits: no object per call. */
    boolean awaitNanos(CompletableFuture<?> f, long timeoutNanos) throws InterruptedException {
        if (f.isDone()) return true;
        CompletionDispatcher.checkMayWait();
        CompletionDispatcher d = dispatcher.running;
        try {
            if (d != null) {
                d.await(f, timeoutNanos);
            } else {
                CompletionDispatcher.parkUntilDone(f, timeoutNanos);
            }
            return true;
        } catch (TimeoutException e) {
            return f.isDone();
        }
    }

    CompletionRouter router() {
        return router;
    }

}
