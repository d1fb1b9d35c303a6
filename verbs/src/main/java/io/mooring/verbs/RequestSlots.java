package io.mooring.verbs;

import io.mooring.verbs.values.WcOpcode;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The outstanding work requests of one queue, as a completion finds them: a QP's send or receive queue
 * ({@link InFlight}, retired in order) or a shared receive queue ({@link SrqInFlight}, retired out of order).
 * Each request is posted to the provider under a Mooring id naming its slot; the slot keeps what the provider
 * does not (the caller's id, the posted opcode, the regions the request keeps alive, its future).
 */
abstract sealed class RequestSlots permits InFlight, SrqInFlight {
    /** Set in the id of every receive, of a QP's own queue or of a shared one. */
    static final long RECEIVE_BIT = 1L << 62;
    /** Set, with {@link #RECEIVE_BIT}, in the id of a receive posted to a shared receive queue. */
    static final long SHARED_BIT = 1L << 61;
    /**
     * What {@link #retire} found for the completed request, written into the poller's one instance (the router's,
     * under its poll lock) so that a completion allocates nothing.
     */
    static final class Retired {
        long userWrId;
        WcOpcode opcode;
        CompletableFuture<WorkCompletion> future;

        void set(long userWrId, WcOpcode opcode, CompletableFuture<?> future) {
            this.userWrId = userWrId;
            this.opcode = opcode;
            @SuppressWarnings("unchecked")
            var f = (CompletableFuture<WorkCompletion>) future;
            this.future = f;
        }
    }

    /**
     * The producers' lock: a post holds it across the provider's post, a modify, reset or destroy while it changes
     * what posts may do. A completion never takes it: retiring is the CQ poller's, without a lock (see {@link #retire}).
     */
    final ReentrantLock lock = new ReentrantLock();
    /** Why the queue takes no more requests, or null; guarded by lock. */
    String closedReason;

    /**
     * Retires the request {@code id} names; false if it is not outstanding (a completion left over from before a
     * reset or destroy), else {@code into} holds what it was. Called by the poller of the queue's CQ under that CQ's
     * poll lock and nothing else: a slot changes hands from the poster to the poller and back by one compare-and-set
     * on its state word each way, so that a poll takes one lock (the CQ's), not one more per completion. A discard
     * racing with it claims slots by the same compare-and-set, so each request retires exactly once.
     */
    abstract boolean retire(long id, boolean success, Retired into);

    /**
     * Drops every outstanding request: after a reset (the NIC discards them without completions) or a destroy
     * (the NIC no longer touches their memory). Their regions are released and their futures failed with {@code why}.
     *
     * @param permanently whether the queue accepts no more requests ({@code why}'s message says why)
     */
    final void discardAll(RuntimeException why, boolean permanently) {
        lock.lock();
        try {
            discardAllLocked(why);
            if (permanently && closedReason == null) {
                closedReason = why.getMessage();
                closed();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Requests posted and not yet retired. */
    final int outstanding() {
        lock.lock();
        try {
            return outstandingLocked();
        } finally {
            lock.unlock();
        }
    }

    abstract void discardAllLocked(RuntimeException why);

    abstract int outstandingLocked();

    /** The queue was discarded permanently (caller holds the lock). */
    void closed() {}

    static boolean isReceive(long id) {
        return (id & RECEIVE_BIT) != 0;
    }

    static void fail(CompletableFuture<?> future, RuntimeException why) {
        if (future != null) future.completeExceptionally(why);
    }
}
