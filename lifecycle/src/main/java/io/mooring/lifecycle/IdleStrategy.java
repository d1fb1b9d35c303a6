package io.mooring.lifecycle;

import java.time.Duration;

/**
 * How a thread with nothing to do waits before it looks again (Agrona's {@code IdleStrategy}): one named, swappable
 * object instead of a wait loop written anew in each class. An instance keeps the state of one thread's back-off, so
 * each thread has its own.
 */
public interface IdleStrategy {
    /**
     * Called after each pass of the thread's loop: returns at once if the pass did work ({@code workCount > 0}), else
     * waits — at most {@code maxNanos} (the thread's next deadline), less when the thread is unparked.
     */
    void idle(int workCount, long maxNanos);

    /**
     * Parks, backing off: {@code minPark} after the first pass without work, twice as long after each further one, up
     * to {@code maxPark}; a pass with work starts over. An idle thread wakes about once per {@code maxPark}.
     *
     * @throws IllegalArgumentException if {@code minPark} is not positive or {@code maxPark} is shorter
     */
    static IdleStrategy backoff(Duration minPark, Duration maxPark) {
        return new BackoffIdleStrategy(minPark.toNanos(), maxPark.toNanos());
    }

    /** Spins ({@link Thread#onSpinWait()}) after a pass without work, never parks: the lowest latency, for a core. */
    static IdleStrategy busySpin() {
        return (workCount, maxNanos) -> {
            if (workCount <= 0) Thread.onSpinWait();
        };
    }
}
