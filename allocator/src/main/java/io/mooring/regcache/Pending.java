package io.mooring.regcache;

import java.util.List;
import java.util.concurrent.CountDownLatch;

/** A registration in flight: misses on pages it covers wait for it rather than register them again. */
final class Pending {
    final long from;
    final long to;
    final int access;
    /** The regions it joins, retired once it is registered. */
    final List<CachedRegion> merging;
    private final CountDownLatch done = new CountDownLatch(1);
    /** Set by an invalidation of its pages while it registers: it is then retired at once. */
    boolean invalidated;

    Pending(long from, long to, int access, List<CachedRegion> merging) {
        this.from = from;
        this.to = to;
        this.access = access;
        this.merging = merging;
    }

    boolean serves(long from, long to, int rights) {
        return this.from <= from && to <= this.to && (access & rights) == rights;
    }

    /** Marks it invalidated if it shares a page with {@code [from, to)}; whether it was not marked before. */
    boolean invalidate(long from, long to) {
        if (invalidated || !(this.from < to && from < this.to)) return false;
        invalidated = true;
        return true;
    }

    /** It is registered, or failed: the misses waiting for it look again. */
    void done() {
        done.countDown();
    }

    /** Waits until it is {@link #done()}, interrupts or not: a registration ends on its own, soon (its interrupt is kept). */
    void awaitDone() {
        boolean interrupted = false;
        for (;;) {
            try {
                done.await();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
    }
}
