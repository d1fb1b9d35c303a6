package io.mooring.verbs;

import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * An idle thread's turn at delivering a {@link CompletionDispatcher}'s completions itself, as an event loop waits on its
 * own descriptors rather than for a task from another thread: {@link #deliverFor} polls the CQ on the calling thread
 * while nobody else does, so a completion runs the code that needs it there with no hand-off between threads, and
 * {@link #wake} ends the turn when other work came for that thread. Meanwhile the dispatcher's thread stands aside,
 * and takes the CQ back when no such thread polls. One per thread that lends itself (a Netty event loop's); {@code wake}
 * from any thread.
 */
public final class IdleDelivery {
    private final CompletionDispatcher dispatcher;
    /** The thread of the turn under way or the last one: what {@link #wake} unparks. */
    volatile Thread owner;
    /** A wake not taken yet: the turn under way, or the next, ends at once. */
    volatile boolean woken;
    /** Whether the owner may sleep in the CQ now: a wake must then cut that sleep short too. */
    volatile boolean inCq;
    /** When the turn under way ends at the latest (the owner's). */
    long deadline;
    /** Why a sleep in the CQ ends early: a wake, or the dispatcher's close. */
    final BooleanSupplier lookUp;
    /** The turn's poll, bound once (no object per turn). */
    final ScopedValue.CallableOp<Integer, InterruptedException> turn;

    IdleDelivery(CompletionDispatcher dispatcher) {
        this.dispatcher = dispatcher;
        this.lookUp = () -> woken || !dispatcher.isRunning();
        this.turn = () -> dispatcher.pollIdle(this);
    }

    /**
     * Delivers completions on the calling thread for up to {@code nanos} (nanoseconds: called on every pass of a loop, it
     * takes no object) as the dispatcher's thread would — the handler and the callbacks of the futures it completes run
     * here, and {@link CompletionDispatcher#isDispatcherThread()} is true meanwhile, so code there must not wait for a
     * completion — and returns after the first batch, once {@link #wake} was called since the last return, or when the
     * time is up; with 0 it takes what is there without sleeping. If another thread polls the CQ now (a caller waiting
     * for its request, another idle thread), or the caller is a virtual thread, or the dispatcher busy-polls or has
     * stopped, it only parks, ended the same ways, and what arrives is delivered by whoever polls.
     *
     * @return the completions delivered here (not counting those that completed a future)
     * @throws InterruptedException if the thread was interrupted (the interrupt is taken)
     */
    public int deliverFor(long nanos) throws InterruptedException {
        return dispatcher.deliverIdle(this, nanos);
    }

    /** Ends the owner's {@link #deliverFor} under way, or its next one at once if none is; from any thread. */
    public void wake() {
        woken = true;
        if (inCq) dispatcher.wakePoller();
        Thread t = owner;
        if (t != null) LockSupport.unpark(t);
    }

    /** Parks the owner until a wake or the deadline, taking the wake. */
    void park() throws InterruptedException {
        long left;
        while (!woken && (left = deadline - System.nanoTime()) > 0) {
            LockSupport.parkNanos(this, left);
            if (Thread.interrupted()) throw new InterruptedException();
        }
        woken = false;
    }
}
