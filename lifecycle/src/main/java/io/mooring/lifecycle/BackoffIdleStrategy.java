package io.mooring.lifecycle;

import java.util.concurrent.locks.LockSupport;

/** {@link IdleStrategy#backoff}: parks for a doubling time between a minimum and a maximum. */
final class BackoffIdleStrategy implements IdleStrategy {
    private final long minParkNanos;
    private final long maxParkNanos;
    private long parkNanos;

    BackoffIdleStrategy(long minParkNanos, long maxParkNanos) {
        if (minParkNanos <= 0 || maxParkNanos < minParkNanos) {
            throw new IllegalArgumentException("a back-off parks for a positive time up to a longer one: min "
                    + minParkNanos + " ns, max " + maxParkNanos + " ns");
        }
        this.minParkNanos = minParkNanos;
        this.maxParkNanos = maxParkNanos;
        this.parkNanos = minParkNanos;
    }

    @Override
    public void idle(int workCount, long maxNanos) {
        if (workCount > 0) {
            parkNanos = minParkNanos;
            return;
        }
        if (maxNanos > 0) LockSupport.parkNanos(this, Math.min(parkNanos, maxNanos));
        parkNanos = Math.min(parkNanos << 1, maxParkNanos);
    }
}
