package io.mooring.verbs;

import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.values.MwType;

/**
 * What a window request does to its window when it retires: a bind gives the window its key and binding, an
 * invalidation ends the binding of the key it names. A send-queue slot keeps one, made at the first window request
 * posted in it and armed again by each later one, so that posting BIND_MW or LOCAL_INV allocates nothing. The slot's
 * owner changes hands as the slot does ({@link InFlight}): the poster arms the ticket before the request is posted,
 * whoever retires the slot runs {@link #completed} and leaves the ticket disarmed.
 */
final class WindowTicket implements InFlight.Outcome {
    private final QueuePair qp;
    private MemoryWindow window;           // a bind's window, pinned until the bind retires
    private MemoryRegion region;           // a bind's region, pinned (the binding's own hold) until then
    private MemoryWindow.State invalidate; // an invalidation's window
    private int key;                       // the key the bind carries or the invalidation ends

    WindowTicket(QueuePair qp) {
        this.qp = qp;
    }

    /**
     * Arms the ticket for a bind of {@code window} over {@code region}, pinning both: the NIC must never be handed
     * a deallocated window (a closed one is refused here), nor have the window deallocated under the bind; the
     * region's pin becomes the binding's when the bind succeeds. Nothing stays pinned if either is closed.
     */
    WindowTicket bind(MemoryWindow window, MemoryRegion region) {
        window.resource().addPin();
        try {
            region.resource().addPin();
        } catch (RuntimeException e) {
            window.resource().removePin();
            throw e;
        }
        this.window = window;
        this.region = region;
        this.invalidate = null; // left armed if a claim refused the last invalidation posted in this slot
        return this;
    }

    /** Arms the ticket for an invalidation of {@code rkey}, which reaches {@code window} now. */
    WindowTicket invalidate(MemoryWindow.State window, int rkey) {
        this.invalidate = window;
        this.key = rkey;
        return this;
    }

    /** The key the bind carries (the posted one, then the one the provider reports). */
    void key(int rkey) {
        this.key = rkey;
    }

    @Override
    public void completed(boolean success) {
        if (invalidate != null) {
            MemoryWindow.State w = invalidate;
            invalidate = null;
            if (success) w.invalidated(key);
            return;
        }
        MemoryWindow w = window;
        MemoryRegion r = region;
        window = null;
        region = null;
        if (success) {
            w.state().bound(key, r, type2Hold(w));
            w.ops().bound(key);
        } else {
            r.resource().removePin();
        }
        w.resource().removePin(); // after bound(): a window closed meanwhile unbinds when it is destroyed
    }

    /**
     * The QP, pinned for a type 2 window that a bind through it just gave a key (see {@link MemoryWindow}); null
     * for type 1, or if the QP was closed while the bind was in flight (it is being destroyed: it cannot be held).
     * Taken when the bind succeeds, not when it is posted: a hold from the post would keep a QP closed before its
     * bind was polled from ever being destroyed, and its destroy is what retires unpolled requests.
     */
    private QueuePair type2Hold(MemoryWindow w) {
        if (w.type() != MwType.TYPE_2) return null;
        try {
            qp.resource().addPin();
            return qp;
        } catch (ResourceClosedException e) {
            return null;
        }
    }
}
