package io.mooring.verbs.soft;

import io.mooring.verbs.Errno;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.spi.SrqOps;
import io.mooring.verbs.values.RecvWr;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A shared receive queue of the soft NIC: the responder of any QP on it takes the next posted receive (an RNR NAK
 * when there is none). Taking one that leaves fewer than the armed limit posted disarms the queue and raises the
 * limit event on a virtual thread, so the responder never runs the application's listener.
 */
final class SoftSrq implements SrqOps {
    final SoftPd pd;
    final int id;
    /** QPs on it; destroying it with any left fails with EBUSY, as rdma-core does. */
    final AtomicInteger users = new AtomicInteger();
    private final Runnable limitReached;
    private final ReceiveRing posted; // guarded by this
    private int limit; // guarded by this; 0: not armed

    SoftSrq(SoftPd pd, int id, int maxWr, Runnable limitReached) {
        this.pd = pd;
        this.id = id;
        this.posted = new ReceiveRing(maxWr, pd);
        this.limitReached = limitReached;
    }

    @Override
    public synchronized void postRecv(RecvWr request, long wrId) {
        posted.add(wrId, request.sgl());
    }

    @Override
    public synchronized void arm(int limit) {
        this.limit = limit;
    }

    @Override
    public synchronized int limit() {
        return limit;
    }

    /** Moves the next posted receive into a responder's {@code into}; false if none is posted. */
    boolean take(RecvWork into) {
        synchronized (this) {
            if (!posted.take(into)) return false;
            if (limit == 0 || posted.size() >= limit) return true;
            limit = 0;
        }
        Thread.ofVirtual().name("soft-srq-" + id + "-limit").start(limitReached);
        return true;
    }

    /** Puts back a receive that a failed request took, so that it is the next one taken. */
    synchronized void putBack(RecvWork receive) {
        posted.putBack(receive);
    }

    @Override
    public void destroy() {
        if (users.get() > 0) {
            throw new VerbsException("ibv_destroy_srq", Errno.EBUSY.number(), "srq " + id,
                    users.get() + " queue pairs still use it");
        }
        pd.children.decrementAndGet();
    }
}
