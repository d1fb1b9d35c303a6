package io.mooring.lease;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A segment a {@link LeaseCache} holds, and the tasks that borrowed it. It is released once the cache let it go
 * (evicted, expired, invalidated) and its last borrower is done — never under a READ or WRITE a borrower still posts:
 * the owner ends a released lease at once, and an access after that fails on the NIC and ends the whole session.
 */
final class CachedLease {
    /** The state bit once the cache let it go; the bits below {@link #FRESH} count the borrowers. */
    private static final int GONE = Integer.MIN_VALUE;
    /** The state bit while the load's own borrow waits for the first task to take it over. */
    private static final int FRESH = 1 << 30;

    final RemoteSegment segment;
    /**
     * Starts with one borrower, the load's own: W-TinyLFU may evict a new entry at once, and the task that asked for
     * the load must still get it. That task — the first to borrow; there always is one — takes this borrow over, so
     * nothing has to give it back.
     */
    private final AtomicInteger state = new AtomicInteger(FRESH | 1);

    CachedLease(RemoteSegment segment) {
        this.segment = segment;
    }

    /** Takes a borrower, unless the cache let it go (the first borrower takes the load's, even then). */
    boolean borrow() {
        for (;;) {
            int s = state.get();
            if ((s & FRESH) != 0) {
                if (state.compareAndSet(s, s & ~FRESH)) return true;
            } else if (s < 0) {
                return false;
            } else if (state.compareAndSet(s, s + 1)) {
                return true;
            }
        }
    }

    /** A borrower is done. @return true if it was the last after the cache let go: the caller releases */
    boolean giveBack() {
        return state.decrementAndGet() == GONE;
    }

    /** The cache lets it go. @return true if nobody borrows it: the caller releases */
    boolean leave() {
        for (;;) {
            int s = state.get();
            if (s < 0) return false;
            if (state.compareAndSet(s, s | GONE)) return s == 0;
        }
    }
}
