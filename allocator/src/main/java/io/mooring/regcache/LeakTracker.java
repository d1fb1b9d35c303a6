package io.mooring.regcache;

import io.mooring.lifecycle.Housekeeper;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;

/**
 * Finds registrations that became unreachable unclosed and gives their regions back, so pages are not pinned
 * forever by a forgotten {@code close()}. A {@link java.lang.ref.Cleaner} would do it, but its list of cleanables
 * is one {@code synchronized} list per Cleaner: a global lock on every hit. Here each thread tracks its pins in one
 * of several stripes (by thread id), so threads meet on a monitor only when they share a stripe; the {@link Housekeeper}
 * drains the reference queue.
 */
final class LeakTracker {
    static final ReferenceQueue<Registration> QUEUE = new ReferenceQueue<>();
    private static final System.Logger LOG = System.getLogger(RegistrationCache.class.getName());
    private static final Stripe[] STRIPES = new Stripe[Integer.highestOneBit(
            Math.max(1, Runtime.getRuntime().availableProcessors()) * 4 - 1) << 1];

    static {
        for (int i = 0; i < STRIPES.length; i++) STRIPES[i] = new Stripe();
        Housekeeper.shared().drain(QUEUE, LeakTracker::release);
    }

    private LeakTracker() {}

    /** Padding before a stripe's head: HotSpot lays out a superclass's fields first. */
    abstract static class StripeHeadPad {
        @SuppressWarnings("unused") private long p0, p1, p2, p3, p4, p5, p6, p7;
    }

    abstract static class StripeHead extends StripeHeadPad {
        RegionPin head;
    }

    /**
     * A doubly-linked list of the pins that the threads of one stripe made; its monitor and head are padded
     * (Agrona-style) away from the neighbouring stripes', which other threads write.
     */
    static final class Stripe extends StripeHead {
        @SuppressWarnings("unused") private long q0, q1, q2, q3, q4, q5, q6, q7;

        synchronized void add(RegionPin h) {
            h.next = head;
            if (head != null) head.prev = h;
            head = h;
        }

        synchronized void remove(RegionPin h) {
            if (h.prev != null) h.prev.next = h.next;
            else if (head == h) head = h.next;
            else return; // already removed
            if (h.next != null) h.next.prev = h.prev;
            h.prev = h.next = null;
        }
    }

    /** The stripe of the calling thread. */
    static Stripe stripe() {
        return STRIPES[(int) Thread.currentThread().threadId() & (STRIPES.length - 1)];
    }

    /** Keeps {@code h} reachable until it is closed or found leaked. */
    static void track(RegionPin h) {
        h.stripe.add(h);
    }

    static void untrack(RegionPin h) {
        h.stripe.remove(h);
    }

    private static void release(Reference<?> leaked) {
        RegionPin h = (RegionPin) leaked;
        untrack(h);
        if (!h.markClosed()) return;
        h.cache.releaseLeaked(h);
        LOG.log(System.Logger.Level.WARNING, "a registration of {0} in {1} of {2} was never closed: released when it"
                + " became unreachable; its pages stayed pinned until then", h, h.cached, h.cache.name());
    }
}
