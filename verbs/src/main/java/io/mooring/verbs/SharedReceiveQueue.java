package io.mooring.verbs;

import io.mooring.lifecycle.DestroyAction;
import io.mooring.lifecycle.Resource;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.spi.SrqOps;
import io.mooring.verbs.values.DeviceAttributes;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.SrqAttributes;
import java.lang.System.Logger.Level;
import java.util.concurrent.CompletableFuture;

/**
 * A shared receive queue ({@code struct ibv_srq}): one pool of posted receives that every queue pair created with
 * it takes from, so a server with many peers posts receives once instead of once per connection. A receive's
 * completion goes to the receive CQ of the QP that took it and names that QP ({@link WorkCompletion#qpNumber()}).
 *
 * <p>Posting never blocks: at most {@link #maxWr()} receives are outstanding (posted and not yet completed by a
 * poll), {@link QueueFullException} past that. {@link #arm} sets the limit event ({@code
 * IBV_EVENT_SRQ_LIMIT_REACHED}): once fewer receives than the limit are posted, the {@link #onLimitReached}
 * listener runs once and the queue is disarmed, as the verbs spec says. A QP moved to ERROR flushes only what it
 * had taken: the other receives stay posted for the other QPs.
 *
 * <p>A child of its protection domain; the QPs using it are its children, destroyed before it.
 */
public final class SharedReceiveQueue extends VerbsObject {
    private static final System.Logger LOG = System.getLogger(SharedReceiveQueue.class.getName());

    private final ProtectionDomain pd;
    private final SrqOps ops;
    private final SrqInFlight slots;
    private final int maxSge;
    private final LimitEvents limitEvents;

    /** The listener, outside the handle: the provider runs it without keeping the handle reachable. */
    static final class LimitEvents implements Runnable {
        private final String name;
        volatile Runnable listener;

        LimitEvents(String name) {
            this.name = name;
        }

        @Override
        public void run() {
            Runnable l = listener;
            if (l == null) return;
            try {
                l.run();
            } catch (RuntimeException e) {
                LOG.log(Level.WARNING, "limit listener of " + name + " threw; ignored", e);
            }
        }
    }

    SharedReceiveQueue(ProtectionDomain pd, SrqOps ops, Resource resource, SrqInFlight slots, int maxSge,
                       LimitEvents limitEvents) {
        super(resource);
        this.pd = pd;
        this.ops = ops;
        this.slots = slots;
        this.maxSge = maxSge;
        this.limitEvents = limitEvents;
    }

    /** Destroys the native queue, then fails what is still posted: nothing will complete it any more. */
    static DestroyAction destroyAction(SrqOps ops, SrqInFlight slots) {
        return () -> {
            ops.destroy();
            slots.discardAll(new ResourceClosedException(
                    "its shared receive queue was destroyed before this receive completed"), true);
        };
    }

    public ProtectionDomain pd() {
        return pd;
    }

    /** How many receives may be outstanding at once. */
    public int maxWr() {
        return slots.depth();
    }

    /** Scatter/gather entries per receive. */
    public int maxSge() {
        return maxSge;
    }

    /** Receives posted and not yet completed (a completion counts once polled). */
    public int posted() {
        return slots.outstanding();
    }

    /**
     * Posts a receive for any QP on this queue; its completion goes to whoever polls that QP's receive CQ.
     *
     * @throws QueueFullException       if {@link #maxWr()} receives are outstanding
     * @throws IllegalArgumentException if the request has more entries than {@link #maxSge()}
     */
    public void post(ReceiveRequest request) {
        post(request, null);
    }

    /** Posts a receive and returns a future for its completion (completed by the poll of the CQ that sees it). */
    public CompletableFuture<WorkCompletion> postAsync(ReceiveRequest request) {
        var future = new CompletableFuture<WorkCompletion>();
        post(request, future);
        return future;
    }

    private void post(ReceiveRequest rr, CompletableFuture<WorkCompletion> future) {
        resource.checkOpen();
        if (rr.sgl().count() > maxSge) {
            throw new IllegalArgumentException(rr.sgl().count() + " scatter/gather entries exceed maxSge " + maxSge
                    + " of " + this);
        }
        slots.lock.lock();
        try {
            long id = slots.claim(rr.wrId(), rr.sgl(), future);
            try {
                ops.postRecv(rr, id);
            } catch (RuntimeException e) {
                slots.unclaim(id);
                throw e;
            }
        } finally {
            slots.lock.unlock();
        }
    }

    /**
     * Arms the limit event ({@code ibv_modify_srq} with {@code IBV_SRQ_LIMIT}): when a QP takes a receive and fewer
     * than {@code limit} stay posted, the {@link #onLimitReached} listener runs once and the queue is disarmed.
     * 0 disarms.
     *
     * @throws IllegalArgumentException if {@code limit} is negative or above {@link #maxWr()}
     */
    public void arm(int limit) {
        resource.checkOpen();
        if (limit < 0 || limit > maxWr()) {
            throw new IllegalArgumentException("SRQ limit " + limit + " is outside [0, " + maxWr() + "] (maxWr of "
                    + this + ")");
        }
        slots.lock.lock();
        try {
            ops.arm(limit);
        } finally {
            slots.lock.unlock();
        }
    }

    /**
     * The armed limit as the device reports it ({@code ibv_query_srq}): 0 when not armed, and once the limit event
     * has disarmed the queue.
     */
    public int limit() {
        resource.checkOpen();
        slots.lock.lock();
        try {
            return ops.limit();
        } finally {
            slots.lock.unlock();
        }
    }

    /**
     * Sets what runs at the limit event ({@code IBV_EVENT_SRQ_LIMIT_REACHED}), on a thread of the provider's (ibv:
     * the context's async event thread; soft: a virtual thread): typically post more receives, then {@link #arm}
     * again. Replaces the previous listener; null removes it.
     */
    public void onLimitReached(Runnable listener) {
        limitEvents.listener = listener;
    }

    SrqOps ops() {
        return ops;
    }

    SrqInFlight slots() {
        return slots;
    }

    /** Refuses a size the device cannot make, naming the value and the limit. */
    static void requireWithin(DeviceAttributes device, SrqAttributes attributes) {
        QpCapabilities.within(attributes.maxWr(), Math.min(device.maxSrqWr(), SrqInFlight.MAX_DEPTH - 1), "maxWr",
                "max_srq_wr");
        QpCapabilities.within(attributes.maxSge(), device.maxSrqSge(), "maxSge", "max_srq_sge");
    }
}
