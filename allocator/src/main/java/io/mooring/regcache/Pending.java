package io.mooring.regcache;

import io.mooring.verbs.values.Access;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/** A registration in flight: misses on pages it covers wait for it rather than register them again. */
final class Pending {
    private static final int REMOTE = Access.mask(Access.REMOTE);

    final long from;
    final long to;
    final int access;
    /** The regions it joins, retired once it is registered. */
    final List<CachedRegion> merging;
    private final CountDownLatch done = new CountDownLatch(1);
    /** Set by an invalidation of its pages while it registers: it is then retired at once. */
    boolean invalidated;

    /**
     * A registration of {@code [from, to)} joined with every region overlapping it that has the same rights, none of
     * them remote. Remote regions are never merged: a merge would widen what an rkey already given to a peer
     * reaches. Adjacent regions are not merged either: a pool of neighbouring buffers would re-register a growing
     * region once per buffer.
     */
    static Pending joining(RegionIndex index, long from, long to, int mask) {
        List<CachedRegion> merging = new ArrayList<>();
        if ((mask & REMOTE) == 0) {
            for (CachedRegion r : index.overlapping(from, to)) {
                if (r.access == mask && !r.isRetired()) {
                    merging.add(r);
                    from = Math.min(from, r.start);
                    to = Math.max(to, r.end);
                }
            }
        }
        return new Pending(from, to, mask, merging);
    }

    private Pending(long from, long to, int access, List<CachedRegion> merging) {
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
