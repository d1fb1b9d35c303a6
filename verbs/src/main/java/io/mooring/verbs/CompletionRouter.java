package io.mooring.verbs;

import io.mooring.verbs.spi.CompletionSink;
import io.mooring.verbs.spi.CqOps;
import io.mooring.verbs.values.WcOpcode;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * What a completion queue does with each polled completion: finds the queue it belongs to — the QP's send or
 * receive queue by QP number, a shared receive queue by the id alone — and retires the request there (restoring
 * the caller's id and opcode, releasing held regions), then
 * completes the request's future or hands the completion to the poller. Separate from the
 * {@link CompletionQueue} handle so that a dispatcher thread can poll without keeping the handle reachable.
 */
final class CompletionRouter implements CompletionSink {
    /** For a poller nobody asks to look up early. */
    static final BooleanSupplier NEVER = () -> false;
    final CqOps ops;
    final String name;
    private final QpTable qps;
    private final SrqInFlight.Table sharedQueues;
    private final ReentrantLock pollLock = new ReentrantLock();
    private final RequestSlots.Retired retired = new RequestSlots.Retired(); // guarded by pollLock
    private WorkCompletion[] target; // guarded by pollLock
    /** Futures completed so far; read after its own poll by the thread that polled. Guarded by pollLock. */
    private long futuresCompleted;
    /** The device reported an overrun (IBV_EVENT_CQ_ERR): completions were lost, so QPs on it take no more posts. */
    volatile boolean overrun;
    private int filled;

    /** Routes by its context's tables: QPs by number, shared receive queues by index. */
    CompletionRouter(CqOps ops, String name, QpTable qps, SrqInFlight.Table sharedQueues) {
        this.ops = ops;
        this.name = name;
        this.qps = qps;
        this.sharedQueues = sharedQueues;
    }

    void overran() {
        overrun = true;
    }

    /**
     * Polls until {@code into} is full or the CQ is empty; completions that completed futures are not counted.
     */
    int poll(WorkCompletion[] into) {
        pollLock.lock();
        try {
            target = into;
            filled = 0;
            while (filled < into.length && ops.poll(into.length - filled, this) > 0) {
                // a round may hand its completions to futures instead of the caller: poll on
            }
            return filled;
        } finally {
            target = null;
            pollLock.unlock();
        }
    }

    /**
     * Polls; if nothing is there for the caller, arms the CQ's event, polls again (a completion may have slipped
     * in before the arm) and sleeps until the event or the deadline, then starts over. An event does not promise
     * a completion: one raised for an earlier arm, whose completion a plain {@link #poll} took, is still pending.
     * So only the deadline ends the wait with 0.
     */
    int pollWaiting(WorkCompletion[] into, long timeoutNanos) throws InterruptedException {
        return pollWaiting(into, timeoutNanos, false, NEVER);
    }

    /**
     * {@link #pollWaiting(WorkCompletion[], long)}, which with {@code anyProgress} also returns (0, if nothing else
     * came) once a completion has completed a future: a dispatcher then looks whether a caller polls for itself, and
     * a caller whether the future was its own. It also returns 0 instead of sleeping once {@code lookUp} is true; a
     * thread that makes it so calls {@link #wake()} after, which ends a sleep under way.
     */
    int pollWaiting(WorkCompletion[] into, long timeoutNanos, boolean anyProgress, BooleanSupplier lookUp)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeoutNanos;
        long completed = futuresCompleted;
        while (true) {
            int n = poll(into);
            if (n != 0 || anyProgress && futuresCompleted != completed) return n;
            ops.requestNotify();
            n = poll(into);
            if (n != 0 || anyProgress && futuresCompleted != completed || lookUp.getAsBoolean()) return n;
            long left = deadline - System.nanoTime();
            if (left <= 0 || !ops.awaitEvent(left)) return 0;
        }
    }

    /** Ends the sleep of the {@code pollWaiting} under way, or of the next one; from any thread. */
    void wake() {
        ops.wake();
    }

    /**
     * Fails the requests on this CQ's QPs once polling it failed with {@code cause} (an overrun CQ fails every poll
     * with EIO): no completion will complete them. See {@link QpQueues#cqFailed} for what is discarded.
     */
    void pollingFailed(RuntimeException cause) {
        var why = new VerbsException("ibv_poll_cq", cause instanceof VerbsException v ? v.errno() : 0, name,
                "it can no longer be polled, so this request's completion will not come: " + cause.getMessage(), cause);
        qps.forEach(q -> q.cqFailed(this, why));
    }

    @Override
    public void completion(long wrId, int status, int opcode, int vendorError, int byteLength, int immediate,
                           int flags, int qpNumber) {
        boolean receive = RequestSlots.isReceive(wrId);
        WcStatus st = WcStatus.of(status);
        QpQueues qp = qps.get(qpNumber);
        if (qp != null && st != WcStatus.SUCCESS) qp.errorSeen = true;
        RequestSlots slots;
        if ((wrId & RequestSlots.SHARED_BIT) != 0) {
            slots = sharedQueues.of(wrId); // its QP may be gone: the receive it took is retired all the same
        } else {
            slots = qp == null ? null : receive ? qp.receive : qp.send;
        }
        // null: its QP or queue was destroyed; false: left over from before a reset. Nobody waits for it any more.
        if (slots == null || !slots.retire(wrId, st == WcStatus.SUCCESS, retired)) return;
        // The provider's opcode tells RECV from RECV_RDMA_WITH_IMM; for everything else we know what we posted.
        WcOpcode op = receive && st == WcStatus.SUCCESS ? WcOpcode.of(opcode) : retired.opcode;
        CompletableFuture<WorkCompletion> future = retired.future;
        retired.future = null;
        if (future != null) {
            futuresCompleted++;
            var wc = new WorkCompletion();
            wc.set(retired.userWrId, st, op, vendorError, byteLength, immediate, flags, qpNumber);
            if (st == WcStatus.SUCCESS) future.complete(wc);
            else future.completeExceptionally(new WorkCompletionException("qpn " + qpNumber, wc));
            return;
        }
        target[filled++].set(retired.userWrId, st, op, vendorError, byteLength, immediate, flags, qpNumber);
    }
}
