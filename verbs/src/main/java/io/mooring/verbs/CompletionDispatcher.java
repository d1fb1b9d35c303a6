package io.mooring.verbs;

import java.lang.System.Logger.Level;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A thread that polls one completion queue: it completes the futures of {@code postAsync} requests (matched
 * by the id each request was posted under) and hands every other completion to a handler. In
 * {@link Mode#EVENTS} mode it sleeps on the CQ's completion channel when idle; in {@link Mode#BUSY_POLL} it
 * spins for the lowest latency at the price of a core. It is a platform thread because it blocks in the
 * provider (a native read for {@code ibv}); callers may wait on its futures from platform or virtual threads.
 */
public final class CompletionDispatcher implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(CompletionDispatcher.class.getName());
    private static final int BATCH = 32;
    private static final long IDLE_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /** Bound on a dispatcher's thread for its whole run: asking costs other threads no thread-local entry. */
    private static final ScopedValue<CompletionDispatcher> DISPATCHING = ScopedValue.newInstance();

    /** How the dispatcher waits when the CQ is empty. */
    public enum Mode { EVENTS, BUSY_POLL }

    private final CompletionRouter router;
    private final Mode mode;
    private final Consumer<WorkCompletion> handler;
    private final CompletionQueue.DispatcherSlot slot;
    private final Thread thread;
    private volatile boolean running = true;

    CompletionDispatcher(CompletionRouter router, Mode mode, Consumer<WorkCompletion> handler,
                         CompletionQueue.DispatcherSlot slot) {
        this.router = router;
        this.mode = mode;
        this.handler = handler;
        this.slot = slot;
        this.thread = Thread.ofPlatform().daemon().name("mooring-dispatcher-" + router.name).unstarted(this::run);
    }

    void start() {
        thread.start();
    }

    public Mode mode() {
        return mode;
    }

    /**
     * Whether the caller is a dispatcher's thread, where the handler and every callback chained on a future it
     * completes run: code there must not wait for a completion, which only that thread would deliver.
     */
    public static boolean isDispatcherThread() {
        return DISPATCHING.isBound();
    }

    private void run() {
        ScopedValue.where(DISPATCHING, this).run(this::dispatch);
    }

    private void dispatch() {
        WorkCompletion[] batch = new WorkCompletion[BATCH];
        for (int i = 0; i < BATCH; i++) batch[i] = new WorkCompletion();
        try {
            while (running) {
                int n = mode == Mode.BUSY_POLL ? router.poll(batch) : router.pollWaiting(batch, IDLE_WAIT_NANOS);
                for (int i = 0; i < n; i++) deliver(batch[i].copy());
                if (n == 0 && mode == Mode.BUSY_POLL) Thread.onSpinWait();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.log(Level.ERROR, "completion dispatcher of " + router.name + " stopped: polling failed", e);
        }
    }

    private void deliver(WorkCompletion wc) {
        try {
            handler.accept(wc);
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "completion handler of " + router.name + " threw on " + wc + "; ignored", e);
        }
    }

    /** Stops the thread after the batch in hand; completions arriving later wait in the CQ. */
    @Override
    public void close() {
        running = false;
        if (Thread.currentThread() != thread) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        slot.running = null;
    }
}
