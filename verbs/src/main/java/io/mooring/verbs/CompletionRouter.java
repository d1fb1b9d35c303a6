package io.mooring.verbs;

import io.mooring.verbs.spi.CompletionSink;
import io.mooring.verbs.spi.CqOps;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * What a completion queue does with each polled completion: finds the QP it belongs to, retires the request
 * in that QP's {@link InFlight} queue (restoring the caller's id and opcode, releasing held regions), then
 * completes the request's future or hands the completion to the poller. Separate from the
 * {@link CompletionQueue} handle so that a dispatcher thread can poll without keeping the handle reachable.
 */
final class CompletionRouter implements CompletionSink {
    /** The two queues of one QP, as registered with the CQs it uses. */
    record QpQueues(InFlight send, InFlight receive) {}

    final CqOps ops;
    final String name;
    private final Map<Integer, QpQueues> qps = new ConcurrentHashMap<>();
    private final ReentrantLock pollLock = new ReentrantLock();
    private WorkCompletion[] target; // guarded by pollLock
    private int filled;

    CompletionRouter(CqOps ops, String name) {
        this.ops = ops;
        this.name = name;
    }

    void register(int qpn, QpQueues queues) {
        qps.put(qpn, queues);
    }

    void unregister(int qpn) {
        qps.remove(qpn);
    }

    /** Polls until {@code into} is full or the CQ is empty; completions that completed futures are not counted. */
    int poll(WorkCompletion[] into) {
        return pollCounting(into) & Integer.MAX_VALUE;
    }

    /**
     * Polls; if the CQ is empty, arms its event, polls again (a completion may have slipped in before the arm),
     * and otherwise sleeps until the event or the timeout.
     */
    int pollWaiting(WorkCompletion[] into, long timeoutNanos) throws InterruptedException {
        int r = pollCounting(into);
        if (r != 0) return r & Integer.MAX_VALUE;
        ops.requestNotify();
        r = pollCounting(into);
        if (r != 0) return r & Integer.MAX_VALUE;
        return ops.awaitEvent(timeoutNanos) ? poll(into) : 0;
    }

    /** The number handed to the caller, with the sign bit set if anything at all was polled. */
    private int pollCounting(WorkCompletion[] into) {
        pollLock.lock();
        try {
            target = into;
            filled = 0;
            boolean any = false;
            while (filled < into.length && ops.poll(into.length - filled, this) > 0) {
                any = true; // a round may hand its completions to futures instead of the caller
            }
            return any ? filled | Integer.MIN_VALUE : filled;
        } finally {
            target = null;
            pollLock.unlock();
        }
    }

    @Override
    public void completion(long wrId, int status, int opcode, int byteLength, int immediate, boolean hasImmediate,
                           int qpNumber) {
        QpQueues qp = qps.get(qpNumber);
        if (qp == null) return; // its QP was destroyed: nobody waits for it any more
        boolean receive = InFlight.isReceive(wrId);
        WcStatus st = WcStatus.of(status);
        InFlight.Retired done = (receive ? qp.receive() : qp.send()).retire(wrId, st == WcStatus.SUCCESS);
        if (done == null) return; // left over from before a reset
        // The provider's opcode tells RECV from RECV_RDMA_WITH_IMM; for everything else we know what we posted.
        WcOpcode op = receive && st == WcStatus.SUCCESS ? WcOpcode.of(opcode) : done.opcode();
        if (done.future() != null) {
            var wc = new WorkCompletion();
            wc.set(done.userWrId(), st, op, byteLength, immediate, hasImmediate, qpNumber);
            if (st == WcStatus.SUCCESS) done.future().complete(wc);
            else done.future().completeExceptionally(new WorkCompletionException("qpn " + qpNumber, wc));
            return;
        }
        target[filled++].set(done.userWrId(), st, op, byteLength, immediate, hasImmediate, qpNumber);
    }
}
