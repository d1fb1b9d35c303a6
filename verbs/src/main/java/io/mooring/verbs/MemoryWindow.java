package io.mooring.verbs;

import io.mooring.lifecycle.Resource;
import io.mooring.verbs.spi.MwOps;
import io.mooring.verbs.values.MwType;

/**
 * A memory window ({@code struct ibv_mw}): a second, narrower rkey over part of a region, which can be bound
 * and revoked without re-registering. Bind it with {@link WorkRequest#bind}; revoke a type 2 window with
 * {@link WorkRequest#invalidate}. While bound, the region under it stays registered, and a type 2 window also
 * keeps the queue pair it was bound through: the spec ties a type 2 binding to that QP, and rxe holds a
 * reference on it (destroying the QP first makes the kernel wait for the reference, warn, and later drop it on
 * freed memory). Closing that QP while the window is bound destroys it once the window is invalidated or closed.
 * (A QP closed while its bind is still unpolled is destroyed at once, as before: the hold starts when the bind
 * completes.)
 */
public final class MemoryWindow extends VerbsObject {
    private final ProtectionDomain pd;
    private final MwOps ops;
    private final MwType type;
    private final State state;

    /**
     * The window's key and binding, kept apart from the handle so that completions and the destroy action can
     * update it without keeping the handle reachable.
     */
    static final class State {
        private final RkeyTable boundByRkey;
        private int rkey;              // guarded by this
        private int postedRkey;        // guarded by this: the key the last bind posted carries
        private MemoryRegion boundTo;  // guarded by this; pinned while bound
        private QueuePair boundThrough; // guarded by this; pinned while a type 2 binding lasts, else null

        State(RkeyTable boundByRkey) {
            this.boundByRkey = boundByRkey;
        }

        synchronized void initialKey(int key) {
            rkey = key;
            postedRkey = key;
        }

        /**
         * The key the next bind carries: the last posted one's with the low 8 "key" bits incremented
         * ({@code ibv_inc_rkey}), as {@code ibv_bind_mw} updates {@code mw->rkey} when it posts. Taken from the last
         * completed bind instead, two binds posted before the first completed carried one key, and the key of the
         * first binding reached the second's range.
         */
        synchronized int nextRkey() {
            postedRkey = (postedRkey & 0xffff_ff00) | ((postedRkey + 1) & 0xff);
            return postedRkey;
        }

        /** The bind that took {@code key} was refused by the post: the next takes it again (if none took one since). */
        synchronized void unpost(int key) {
            if (postedRkey == key) postedRkey = (key & 0xffff_ff00) | ((key - 1) & 0xff);
        }

        synchronized int rkey() {
            return rkey;
        }

        synchronized boolean isBound() {
            return boundTo != null;
        }

        /**
         * A bind completed: the window now reaches {@code region} through {@code key}. Adopts the hold on the
         * region taken when the bind was posted (it may have been closed since; it must stay registered while
         * the window reaches it) and, type 2, the hold on the QP {@code through} taken as the bind completed.
         */
        synchronized void bound(int key, MemoryRegion region, QueuePair through) {
            unbindLocked();
            rkey = key;
            boundTo = region;
            boundThrough = through;
            boundByRkey.put(key, this);
        }

        /** A LOCAL_INV of {@code key} completed. */
        synchronized void invalidated(int key) {
            if (key == rkey) unbindLocked();
        }

        /** The window was deallocated: the NIC no longer reaches the region through it. */
        synchronized void deallocated() {
            unbindLocked();
        }

        private void unbindLocked() {
            if (boundTo == null) return;
            boundByRkey.remove(rkey, this);
            MemoryRegion region = boundTo;
            QueuePair qp = boundThrough;
            boundTo = null;
            boundThrough = null;
            region.resource().removePin();
            if (qp != null) qp.resource().removePin();
        }
    }

    MemoryWindow(ProtectionDomain pd, MwOps ops, Resource resource, MwType type, State state) {
        super(resource);
        this.pd = pd;
        this.ops = ops;
        this.type = type;
        this.state = state;
    }

    public ProtectionDomain pd() {
        return pd;
    }

    public MwType type() {
        return type;
    }

    /** The current rkey: the one of the last completed bind (a type 2 window gets a new one per bind). */
    public int rkey() {
        resource.checkOpen();
        return state.rkey();
    }

    /** Whether a bind completed and no invalidate has since. */
    public boolean isBound() {
        return state.isBound();
    }

    /** The key the next bind will carry ({@link State#nextRkey()}); each call hands out a new one. */
    int nextRkey() {
        return state.nextRkey();
    }

    MwOps ops() {
        return ops;
    }

    State state() {
        return state;
    }

}
