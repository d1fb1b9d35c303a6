package io.mooring.verbs;

import io.mooring.lifecycle.IdleStrategy;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * A thread that polls one completion queue: it completes the futures of {@code postAsync} requests (matched
 * by the id each request was posted under) and hands every other completion to a handler. In
 * {@link Mode#EVENTS} mode it sleeps on the CQ's completion channel when idle; in {@link Mode#BUSY_POLL} it
 * spins ({@link IdleStrategy#busySpin()}) for the lowest latency at the price of a core. It is a platform thread of
 * its own, not housekeeping, because it blocks in the provider (a native read for {@code ibv}); callers may wait on
 * its futures from platform or virtual threads.
 *
 * <p>In EVENTS mode a platform thread that waits for one of its futures ({@link #await}) polls the CQ itself while
 * nobody else does (the leader/follower pattern): the completion it waits for then wakes the thread that needs it,
 * not this one first and the caller after it — one thread wake-up per blocking call instead of two. While callers
 * poll for themselves this thread stands aside, napping, and takes what arrives between their calls. An idle thread
 * that would otherwise sleep — a Netty event loop's — lends itself the same way for as long as it likes
 * ({@link IdleDelivery}); this thread then sleeps until the last such thread leaves the CQ.
 */
public final class CompletionDispatcher implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(CompletionDispatcher.class.getName());
    private static final int BATCH = 32;
    private static final long IDLE_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
    /**
     * How long this thread stands aside after a caller polled, and how often a polling caller looks up from the CQ
     * (a future completed from elsewhere — a lost session, a cancellation — is seen that late at most).
     */
    private static final long LINGER_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** How a BUSY_POLL pass that found nothing waits: a spin, never a park. */
    private static final IdleStrategy SPIN = IdleStrategy.busySpin();
    /** How long a caller polls for itself before it leaves the rest of a long wait to this thread. */
    private static final long CALLER_POLL_NANOS = TimeUnit.MILLISECONDS.toNanos(8);
    /** Bound on a dispatcher's thread for its whole run: asking costs other threads no thread-local entry. */
    private static final ScopedValue<CompletionDispatcher> DISPATCHING = ScopedValue.newInstance();

    /** How the dispatcher waits when the CQ is empty. */
    public enum Mode { EVENTS, BUSY_POLL }

    private final CompletionRouter router;
    private final Mode mode;
    private final Consumer<WorkCompletion> handler;
    private final CompletionQueue.DispatcherSlot slot;
    private final Thread thread;
    /** Held by whoever polls the CQ and delivers: this thread, or a caller waiting in {@link #await}. */
    private final ReentrantLock poller = new ReentrantLock();
    /** The batch a polling caller fills: guarded by {@link #poller}, so one serves every caller. */
    private final WorkCompletion[] callerBatch = newBatch();
    /** Callers parked in {@link #await} whose futures are not done: this thread must not stand aside. */
    private final AtomicInteger waitingToBeServed = new AtomicInteger();
    /** When a platform caller last waited or polled. */
    private volatile long callerActive = System.nanoTime() - LINGER_NANOS;
    private volatile boolean running = true;
    /** Whether this thread stands aside, parked for a linger: a parked caller wakes it. */
    private volatile boolean napping;
    /** How it stands aside: a park of one linger (an unpark cuts it short). */
    private final IdleStrategy nap =
            IdleStrategy.backoff(Duration.ofNanos(LINGER_NANOS), Duration.ofNanos(LINGER_NANOS));
    /** Threads in an {@link IdleDelivery} turn that poll the CQ or are about to: this thread stands aside for them. */
    private final AtomicInteger idlePollers = new AtomicInteger();
    /** Whether this thread sleeps until idle pollers leave: the last to leave unparks it. */
    private volatile boolean parkedForIdle;
    /** Whether this thread holds the CQ asleep in it: an idle poller wakes it to take over. */
    private volatile boolean sleepingInCq;
    /** Why this thread's sleep in the CQ ends early. */
    private final BooleanSupplier yieldToIdle = () -> idlePollers.get() > 0 || !running;
    /** Binds {@link #DISPATCHING} for a thread that delivers here; made once, as it is used for every idle turn. */
    private final ScopedValue.Carrier dispatching = ScopedValue.where(DISPATCHING, this);

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
     * Whether the caller delivers completions — a dispatcher's thread, a caller polling for itself in {@link #await}, or
     * an idle thread in its {@link IdleDelivery} turn — where the handler and every callback chained on a future it
     * completes run: code there must not wait for a completion, which only that thread would deliver.
     */
    public static boolean isDispatcherThread() {
        return DISPATCHING.isBound();
    }

    /**
     * Refuses a wait where completions are delivered: it would wait for a completion only that thread can deliver — a
     * deadlock until some timeout, for everything on the CQ.
     *
     * @throws WrongThreadException on such a thread
     */
    public static void checkMayWait() {
        if (isDispatcherThread()) {
            throw new WrongThreadException(Thread.currentThread().getName() + " delivers completions: a blocking call"
                    + " here would wait for itself. Use the async form (and chain on its future) in callbacks");
        }
    }

    private void run() {
        dispatching.run(this::dispatch);
    }

    private void dispatch() {
        WorkCompletion[] batch = newBatch();
        try {
            while (running) {
                if (mode == Mode.EVENTS && standAside(batch)) continue;
                int n;
                poller.lockInterruptibly();
                try {
                    if (!running) break; // closed by a caller that delivered meanwhile
                    if (mode == Mode.BUSY_POLL) {
                        n = router.poll(batch);
                    } else {
                        sleepingInCq = true;
                        try {
                            n = router.pollWaiting(batch, IDLE_WAIT_NANOS, true, yieldToIdle);
                        } finally {
                            sleepingInCq = false;
                        }
                    }
                    deliver(batch, n);
                } finally {
                    poller.unlock();
                }
                if (mode == Mode.BUSY_POLL) SPIN.idle(n, 0);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            pollingFailed(e);
        }
    }

    /**
     * Stops this dispatcher when polling fails (an overrun CQ fails every poll with EIO), as nothing will deliver a
     * completion again: it lets go of the CQ, so that a hand poll meets the provider's error itself, then fails the
     * requests waiting on the CQ's QPs. On this thread or a caller polling for itself, whichever met the error.
     */
    private void pollingFailed(RuntimeException e) {
        LOG.log(Level.ERROR, "completion dispatcher of " + router.name + " stopped: polling failed", e);
        running = false;
        slot.release(this);
        router.pollingFailed(e);
    }

    /**
     * Sleeps while an idle thread takes its turn at the CQ (the last to leave wakes it). Naps instead of sleeping in the
     * CQ while callers poll for themselves — one polls, or wanted to within the linger — and nobody waits to be served,
     * then takes whatever arrived; false once this thread should poll again.
     */
    private boolean standAside(WorkCompletion[] batch) {
        if (idlePollers.get() > 0) { // it delivers everything, callers' futures too, until it leaves
            parkedForIdle = true;
            if (idlePollers.get() > 0) LockSupport.parkNanos(this, IDLE_WAIT_NANOS);
            parkedForIdle = false;
            return true;
        }
        if (waitingToBeServed.get() > 0 || !poller.isLocked() && System.nanoTime() - callerActive > LINGER_NANOS) {
            return false;
        }
        napping = true;
        nap.idle(0, LINGER_NANOS);
        napping = false;
        if (poller.tryLock()) {
            try {
                if (running) deliver(batch, router.poll(batch));
            } finally {
                poller.unlock();
            }
        }
        return true;
    }

    /**
     * {@link CompletionQueue#await}: in EVENTS mode a platform thread polls the CQ itself for a while if nobody else
     * does (see the class comment); the completions it takes for others are delivered on it, as on this dispatcher's
     * thread, so {@link #isDispatcherThread()} is true meanwhile. A wait that outlasts {@link #CALLER_POLL_NANOS}, or
     * finds the CQ polled by someone else, is served by whoever polls.
     */
    void await(CompletableFuture<?> f, long timeoutNanos) throws InterruptedException, TimeoutException {
        long start = System.nanoTime();
        boolean mayPoll = mode == Mode.EVENTS && !Thread.currentThread().isVirtual();
        if (mayPoll && running) {
            callerActive = start; // even if the CQ is taken now: this thread stands aside after its delivery
            if (poller.tryLock()) {
                try {
                    pollFor(f, start + Math.min(timeoutNanos, CALLER_POLL_NANOS));
                } finally {
                    callerActive = System.nanoTime();
                    poller.unlock();
                }
                if (f.isDone()) return;
            }
        }
        long left = timeoutNanos - (System.nanoTime() - start);
        if (left <= 0) throw new TimeoutException("not done within " + timeoutNanos + " ns");
        // Counted down once: by whoever completes f, as it does (from then on nobody needs to poll for this caller),
        // or by this caller when it stops waiting first — a timed-out wait must not keep this thread from standing
        // aside for good. A platform caller counts as active from then on: a blocking caller served here is likely
        // to wait again at once, and must find this thread standing aside, not asleep in the CQ — else, where
        // serving takes longer than the linger, every later wait would be served here too.
        waitingToBeServed.incrementAndGet();
        var counted = new AtomicBoolean(true);
        Runnable served = () -> {
            if (counted.getAndSet(false)) {
                if (mayPoll) callerActive = System.nanoTime();
                waitingToBeServed.decrementAndGet();
            }
        };
        f.whenComplete((v, e) -> served.run());
        if (napping) LockSupport.unpark(thread);
        try {
            parkUntilDone(f, left);
        } finally {
            served.run();
        }
    }

    /** Parks until {@code f} is done (its outcome left in it) or {@code timeoutNanos} have passed. */
    static void parkUntilDone(CompletableFuture<?> f, long timeoutNanos) throws InterruptedException, TimeoutException {
        try {
            if (f instanceof CompletionFuture<?> cf) {
                cf.parkUntilDone(timeoutNanos); // its own get would come back here
            } else {
                f.get(timeoutNanos, TimeUnit.NANOSECONDS);
            }
        } catch (ExecutionException | CancellationException e) {
            // done: the caller reads the outcome from f
        }
    }

    /** Polls and delivers on the caller's thread until {@code f} is done, {@code until} or this dispatcher's end. */
    private void pollFor(CompletableFuture<?> f, long until) throws InterruptedException {
        dispatching.call(() -> {
            long left;
            try {
                while (!f.isDone() && running && (left = until - System.nanoTime()) > 0) {
                    deliver(callerBatch, router.pollWaiting(callerBatch, Math.min(left, LINGER_NANOS), true,
                            CompletionRouter.NEVER));
                }
            } catch (RuntimeException e) {
                pollingFailed(e); // fails f too, if it is a request on this CQ
            }
            return null;
        });
    }

    /** A turn for an idle thread to deliver this dispatcher's completions ({@link IdleDelivery}). */
    public IdleDelivery idleDelivery() {
        return new IdleDelivery(this);
    }

    boolean isRunning() {
        return running;
    }

    /** Cuts short the sleep in the CQ under way, whoever polls. */
    void wakePoller() {
        router.wake();
    }

    /**
     * {@link IdleDelivery#deliverFor}: takes the CQ if nobody holds it — or if this dispatcher's thread sleeps in it, by
     * waking it (it sees an idle poller, lets go and stands aside) — and polls it once, with {@code d.lookUp} ending the
     * sleep; else parks. Leaving, the last idle poller lets this thread stand aside a linger more (the loop is likely
     * back soon) and then take the CQ again.
     */
    int deliverIdle(IdleDelivery d, long nanos) throws InterruptedException {
        d.owner = Thread.currentThread();
        if (d.woken) {
            d.woken = false;
            return 0;
        }
        d.deadline = System.nanoTime() + Math.min(Math.max(0, nanos), Long.MAX_VALUE / 4);
        if (mode == Mode.EVENTS && running && !Thread.currentThread().isVirtual() && !isDispatcherThread()) {
            idlePollers.incrementAndGet();
            boolean locked = false;
            try {
                locked = poller.tryLock();
                if (!locked && nanos > 0) {
                    if (sleepingInCq) router.wake();
                    locked = poller.tryLock(LINGER_NANOS, TimeUnit.NANOSECONDS);
                }
                if (locked) {
                    int n = dispatching.call(d.turn);
                    d.woken = false;
                    return n;
                }
            } finally {
                if (locked) poller.unlock();
                if (idlePollers.decrementAndGet() == 0) {
                    callerActive = System.nanoTime();
                    if (parkedForIdle) LockSupport.unpark(thread);
                }
            }
        }
        d.park();
        return 0;
    }

    /** One idle turn's poll, holding the CQ: what came, or a sleep until something does, a wake or the deadline. */
    int pollIdle(IdleDelivery d) throws InterruptedException {
        try {
            long left = d.deadline - System.nanoTime();
            int n;
            if (left <= 0 || !running) {
                n = running ? router.poll(callerBatch) : 0;
            } else {
                d.inCq = true;
                try {
                    n = router.pollWaiting(callerBatch, left, true, d.lookUp);
                } finally {
                    d.inCq = false;
                }
            }
            deliver(callerBatch, n);
            return n;
        } catch (RuntimeException e) {
            pollingFailed(e);
            return 0;
        }
    }

    private static WorkCompletion[] newBatch() {
        WorkCompletion[] batch = new WorkCompletion[BATCH];
        for (int i = 0; i < BATCH; i++) batch[i] = new WorkCompletion();
        return batch;
    }

    private void deliver(WorkCompletion[] batch, int n) {
        for (int i = 0; i < n; i++) deliver(batch[i].copy());
    }

    /**
     * Whatever the handler throws, Errors included (an assertion, a stack overflow), is logged and goes no further, as
     * Netty's event loop does with its tasks: every future on the CQ depends on this thread, and a waiting caller that
     * delivers for it must not get another's failure.
     */
    private void deliver(WorkCompletion wc) {
        try {
            handler.accept(wc);
        } catch (Throwable e) {
            LOG.log(Level.ERROR, "completion handler of " + router.name + " threw on " + wc + "; ignored", e);
        }
    }

    /**
     * Stops the thread after the batch in hand, and callers from polling; completions arriving later wait in the CQ.
     * Called while delivering (from a handler or callback) it returns at once: nothing polls after that delivery.
     */
    @Override
    public void close() {
        running = false;
        LockSupport.unpark(thread);
        router.wake(); // whoever sleeps in the CQ — an idle thread, say — looks up and leaves
        if (Thread.currentThread() != thread && !poller.isHeldByCurrentThread()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            poller.lock(); // a caller polling for itself sees running == false within a linger: let it leave
            poller.unlock();
        }
        slot.release(this);
    }
}
