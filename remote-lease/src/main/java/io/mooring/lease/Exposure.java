package io.mooring.lease;

import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.MemoryWindow;
import java.util.concurrent.CompletableFuture;

/**
 * How the peer reaches one lease — the key its {@link Isolation} made — and how that access is taken back when the
 * lease ends. A {@link Lease} holds one. A window's key is kept as it was bound: the window moves on to other leases.
 */
sealed interface Exposure {
    /** The key the peer names the lease's bytes with. */
    int rkey();

    /** Revokes the key: the future completes once no access through it can succeed any more. */
    CompletableFuture<Void> revoke();

    /** A window bound over the lease's bytes of its chunk's registration ({@link Isolation#WINDOW}). */
    record Window(MemoryWindow window, int rkey, WindowPool pool) implements Exposure {
        @Override
        public CompletableFuture<Void> revoke() {
            return pool.invalidate(window);
        }
    }

    /**
     * A window bound over a registration of the lease's bytes alone ({@link Isolation#DEDICATED_REGISTRATION}):
     * invalidated, then the registration deregistered — now, or after the owner's last request on it.
     */
    record DedicatedWindow(MemoryWindow window, int rkey, MemoryRegion registration, WindowPool pool)
            implements Exposure {
        @Override
        public CompletableFuture<Void> revoke() {
            return pool.invalidate(window).thenRun(registration::close);
        }
    }

    /** The chunk region's own key ({@link Isolation#WHOLE_REGION}): nothing to revoke, the peer is trusted. */
    record WholeRegion(int rkey) implements Exposure {
        @Override
        public CompletableFuture<Void> revoke() {
            return CompletableFuture.completedFuture(null);
        }
    }
}
