package io.mooring.verbs;

import io.mooring.lifecycle.DestroyAction;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.spi.QpOps;
import io.mooring.verbs.values.QpState;

/**
 * What a queue pair shares with the completion routers of its context, outside its handle (so polling never keeps a
 * QP reachable): its send queue, its receive queue (a shared receive queue's slots, for a QP on one) and its state as
 * the public layer last set it. Every post checks the state here, under its queue's lock, and every modify changes it
 * holding the QP's queue locks — the one place the QP state machine is enforced; providers do not check it again.
 */
final class QpQueues {
    final InFlight send;
    final RequestSlots receive;
    /** Whether {@link #receive} belongs to a shared receive queue (a reset or destroy of the QP leaves it alone). */
    final boolean shared;
    /** The routers of its send and receive CQs: a CQ that can no longer be polled fails its requests. */
    final CompletionRouter sendCq;
    final CompletionRouter recvCq;
    /** The provider's QP, set before it enters its context's {@link QpTable} (whose volatile write publishes it). */
    QpOps ops;
    /** The state the last modify set; the device may since have moved the QP to ERROR on its own. */
    volatile QpState known = QpState.RESET;
    /** An error completion was polled since the last modify: the device may have moved the QP to ERROR. */
    volatile boolean errorSeen;

    QpQueues(InFlight send, RequestSlots receive, boolean shared, CompletionRouter sendCq, CompletionRouter recvCq) {
        this.send = send;
        this.receive = receive;
        this.shared = shared;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
    }

    /** The receive queue as the QP's own ring (caller knows it is not shared). */
    InFlight ownReceive() {
        return (InFlight) receive;
    }

    /**
     * Destroys the native QP, then forgets its outstanding requests: once {@code ibv_destroy_qp} returned the
     * NIC no longer touches their memory, so their regions are released and their futures failed. The receives of
     * a shared receive queue stay posted for the other QPs on it. Holding the QP's queue locks throughout: a post in
     * progress finishes first, and one after it finds its queue closed, never the destroyed native QP.
     */
    static DestroyAction destroyAction(QpOps qp, QpQueues queues, QpTable table) {
        return () -> {
            queues.lock();
            try {
                qp.destroy();
                table.remove(qp.qpNumber(), queues);
                var why = new ResourceClosedException("qpn " + qp.qpNumber()
                        + " was destroyed before this request completed");
                queues.send.discardAll(why, true);
                if (!queues.shared) queues.receive.discardAll(why, true);
            } finally {
                queues.unlock();
            }
        };
    }

    /**
     * Fails the requests whose completions go to {@code cq}, which can no longer be polled: nothing would complete
     * them. A QP in ERROR or RESET has them discarded, as a reset does: the NIC only flushes them (into that CQ) or
     * has forgotten them, and touches their memory no more — an overrun moves every QP that lost a completion to
     * ERROR. Any other QP may still be working on them: their futures fail, but their regions stay pinned until a
     * reset or destroy. A shared receive queue's receives are left alone: a QP on another CQ may take them.
     */
    void cqFailed(CompletionRouter cq, VerbsException why) {
        boolean sends = sendCq == cq;
        boolean receives = !shared && recvCq == cq;
        if (!sends && !receives) return;
        lock(); // no modify changes the state meanwhile (the NIC only moves it to ERROR), no post slips in
        try {
            if (send.closedReason != null) return; // destroyed meanwhile: nothing is left
            QpState s;
            try {
                s = ops.state();
            } catch (RuntimeException e) {
                s = null; // unknown: the NIC may be working on them
            }
            boolean idle = s == QpState.ERROR || s == QpState.RESET;
            if (sends) failOrDiscard(send, idle, why);
            if (receives) failOrDiscard(ownReceive(), idle, why);
        } finally {
            unlock();
        }
    }

    private static void failOrDiscard(InFlight queue, boolean discard, VerbsException why) {
        if (discard) queue.discardAllLocked(why);
        else queue.failFuturesLocked(why);
    }

    /** Takes the QP's queue locks (send, then its own receive queue's), which every post and modify hold. */
    void lock() {
        send.lock.lock();
        if (!shared) receive.lock.lock();
    }

    void unlock() {
        if (!shared) receive.lock.unlock();
        send.lock.unlock();
    }

    /**
     * Refuses a post that the QP's state does not take (caller holds the queue's lock). The state is the one last
     * set; if that refuses, the device is asked, since it may have moved the QP to ERROR, which takes posts (and
     * flushes them). {@code qp} is named only when refused: building its name on every post would allocate.
     */
    void requireAccepts(RequestSlots queue, boolean sends, CompletionQueue cq, QueuePair qp) {
        if (queue.closedReason != null) {
            throw new ResourceClosedException(qp.resource.info(), qp + ": " + queue.closedReason);
        }
        if (cq.router().overrun) {
            throw new VerbsException(sends ? "ibv_post_send" : "ibv_post_recv", Errno.EIO.number(), qp.toString(),
                    "its " + (sends ? "send" : "receive") + " CQ " + cq + " overran its capacity of " + cq.capacity()
                    + " (IBV_EVENT_CQ_ERR): completions were lost and its QPs go to ERROR; destroy them and"
                    + " the CQ, and size a CQ for the queue depths of every QP on it");
        }
        QpState s = known;
        if (sends ? s.acceptsSends() : s.acceptsReceives()) return;
        s = ops.state();
        if (sends ? s.acceptsSends() : s.acceptsReceives()) return;
        throw new QpStateException(sends ? "ibv_post_send" : "ibv_post_recv", qp.toString(), s,
                sends ? "posting a send" : "posting a receive");
    }
}
