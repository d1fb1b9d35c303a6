package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.MemoryWindow;
import java.lang.foreign.MemorySegment;
import java.util.EnumSet;
import java.util.concurrent.CompletableFuture;

/**
 * How a lease confines a peer to exactly its block. With {@link #WINDOW} and {@link #DEDICATED_REGISTRATION} the
 * peer's key is a type 2 memory window bound on that peer's QP: a key another peer learns or guesses reaches
 * nothing through its own QP (the device checks it; {@link IsolationProbe} makes sure it does). Each mode owns its
 * rule: how it makes a lease's {@link Exposure} from the manager's {@link WindowPool}, and what it needs of the arena.
 */
public enum Isolation {
    /**
     * A window bound over the block's bytes of its chunk's registration, invalidated when the lease ends. Chosen
     * where the device enforces a window's bounds.
     */
    WINDOW {
        @Override
        CompletableFuture<Exposure> expose(Lease lease, WindowPool windows) {
            Block block = lease.block();
            return windows.bind(lease, block.region(), block.regionOffset() + lease.offset())
                    .thenApply(window -> new Exposure.Window(window, window.rkey(), windows));
        }

        @Override
        boolean bindsOnChunks() {
            return true;
        }
    },
    /**
     * A window bound over a registration of the block's bytes alone, which has no remote rights of its own: the
     * registration bounds the access where the device checks a window access against its whole region (rxe does),
     * the window confines it to the peer's QP. Both end with the lease.
     */
    DEDICATED_REGISTRATION {
        @Override
        CompletableFuture<Exposure> expose(Lease lease, WindowPool windows) {
            // The NIC's view: the lease's bytes within its chunk's registered segment, not the block's scoped segment. A
            // registration over the scoped segment would also stop working when the block closes (the soft provider
            // checks the scope), which would hide a missing deregistration that a real NIC would not forgive. The
            // chunk's region is the memory's owner, so the memory outlives this registration. It has no remote rights:
            // its own key reaches nothing, only the window over it does.
            MemoryRegion chunk = lease.block().region();
            MemorySegment memory = chunk.segment().asSlice(lease.address() - chunk.address(), lease.length());
            MemoryRegion region = windows.pd().register(memory, EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND),
                    chunk.resource());
            CompletableFuture<MemoryWindow> bound;
            try {
                bound = windows.bind(lease, region, 0);
            } catch (RuntimeException e) {
                region.close();
                throw e;
            }
            return bound.whenComplete((window, error) -> {
                if (error != null) region.close();
            }).thenApply(window -> new Exposure.DedicatedWindow(window, window.rkey(), region, windows));
        }
    },
    /**
     * The chunk region's own rkey: the peer can reach every neighbour of the block, and so can any peer of the
     * endpoint that learns the key. Only by explicit configuration, for trusted peers.
     */
    WHOLE_REGION {
        @Override
        CompletableFuture<Exposure> expose(Lease lease, WindowPool windows) {
            return CompletableFuture.completedFuture(new Exposure.WholeRegion(lease.block().rkey()));
        }
    };

    /**
     * Makes the key the peer will use for {@code lease}, on the peer's QP through {@code windows}; the future fails if
     * the device refuses (it may also throw before anything is posted).
     */
    abstract CompletableFuture<Exposure> expose(Lease lease, WindowPool windows);

    /** Whether windows are bound over the arena's chunk registrations, which then need MW_BIND. */
    boolean bindsOnChunks() {
        return false;
    }
}
