package io.mooring.verbs;

import io.mooring.verbs.spi.QpOps;
import io.mooring.verbs.values.QpAttributes;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.QpState;
import io.mooring.verbs.values.WcOpcode;
import java.util.concurrent.CompletableFuture;

/**
 * A queue pair's own receive queue as its handle posts to it: a receive is checked against the QP's capabilities
 * and state, claims a slot of the {@link InFlight} ring and goes to the provider under the queue's lock. A QP on a
 * shared receive queue posts nothing here: its receives are posted to that queue.
 */
final class ReceiveQueue {
    private final QueuePair qp;
    private final QpOps ops;
    private final QpQueues queues;
    private final CompletionQueue cq;
    private final QpCapabilities capabilities;
    private final SharedReceiveQueue srq; // null: it has its own receive queue

    ReceiveQueue(QueuePair qp, QpOps ops, QpQueues queues, CompletionQueue cq, QpCapabilities capabilities,
                 SharedReceiveQueue srq) {
        this.qp = qp;
        this.ops = ops;
        this.queues = queues;
        this.cq = cq;
        this.capabilities = capabilities;
        this.srq = srq;
    }

    CompletableFuture<WorkCompletion> postAsync(ReceiveRequest request) {
        CompletableFuture<WorkCompletion> future = cq.newFuture();
        post(request, future);
        return future;
    }

    void post(ReceiveRequest rr, CompletableFuture<WorkCompletion> future) {
        qp.resource.checkOpen();
        if (srq != null) {
            throw new IllegalStateException(qp + " takes its receives from " + srq + "; post them there");
        }
        if (rr.sgl().count() > capabilities.maxRecvSge()) {
            throw new IllegalArgumentException(rr.sgl().count() + " scatter/gather entries exceed maxRecvSge "
                    + capabilities.maxRecvSge() + " of " + qp);
        }
        InFlight receive = queues.ownReceive();
        receive.lock.lock();
        try {
            queues.requireAccepts(receive, false, cq, qp);
            long id = receive.claim("ibv_post_recv", qp, rr.wrId(), WcOpcode.RECV, rr.sgl(), null, future, null);
            try {
                ops.postRecv(rr, id);
            } catch (RuntimeException e) {
                receive.unclaim();
                throw e;
            }
            if (queues.known == QpState.ERROR || queues.errorSeen) flushIfInError();
        } finally {
            receive.lock.unlock();
        }
    }

    /**
     * A receive posted to a QP in ERROR must complete with WR_FLUSH_ERR. A driver whose {@code post_recv} only
     * writes the user-mapped queue (rxe) does not tell the kernel, which flushes only when its responder next runs;
     * moving the QP to ERROR again (allowed from any state) makes it run. Only on this rare path: the state is known
     * to be ERROR, or asked for when an error completion was seen. Caller holds the receive lock, so no modify runs.
     */
    private void flushIfInError() {
        if (ops.state() != QpState.ERROR) {
            queues.errorSeen = false;
            return;
        }
        ops.modify(QpAttributes.builder().state(QpState.ERROR).build());
        queues.known = QpState.ERROR;
    }

    /** Outstanding requests: for a QP on a shared receive queue, that queue's. */
    int outstanding() {
        return queues.receive.outstanding();
    }
}
