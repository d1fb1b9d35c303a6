package io.mooring.verbs.soft;

import io.mooring.verbs.Errno;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.spi.SrqOps;
import java.util.ArrayDeque;
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
    private final ArrayDeque<SoftQp.RecvWork> posted = new ArrayDeque<>(); // guarded by this
    private int limit; // guarded by this; 0: not armed

    SoftSrq(SoftPd pd, int id, Runnable limitReached) {
        this.pd = pd;
        this.id = id;
        this.limitReached = limitReached;
    }

    @Override
    public synchronized void postRecv(ReceiveRequest request, long wrId) {
        posted.add(new SoftQp.RecvWork(wrId, SoftQp.sges(request.sgl()), pd));
    }

    @Override
    public synchronized void arm(int limit) {
        this.limit = limit;
    }

    @Override
    public synchronized int limit() {
        return limit;
    }

    /** The next posted receive for a responder, or null if none is. */
    SoftQp.RecvWork take() {
        SoftQp.RecvWork next;
        synchronized (this) {
            next = posted.poll();
            if (next == null || limit == 0 || posted.size() >= limit) return next;
            limit = 0;
        }
        Thread.ofVirtual().name("soft-srq-" + id + "-limit").start(limitReached);
        return next;
    }

    /** Puts back a receive that a failed request took, so that it is the next one taken. */
    synchronized void putBack(SoftQp.RecvWork receive) {
        posted.addFirst(receive);
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
