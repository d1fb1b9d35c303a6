package io.mooring.verbs;

import io.mooring.verbs.spi.QpOps;
import io.mooring.verbs.values.Opcode;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.WcOpcode;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;

/**
 * A queue pair's send queue as its handle posts to it: a request is checked against the QP's capabilities and
 * state, claims a slot of the {@link InFlight} ring and goes to the provider, all under the queue's lock. A window
 * request (BIND_MW, or LOCAL_INV of a key one of the PD's windows holds) also arms its slot's {@link WindowTicket},
 * which updates the window when the request retires.
 */
final class SendQueue {
    private static final String VERB = "ibv_post_send";

    private final QueuePair qp;
    private final QpOps ops;
    private final QpQueues queues;
    private final CompletionQueue cq;
    private final QpCapabilities capabilities;
    // per slot index of queues.send, made at the first window request: a QP that binds no window pays nothing (guarded
    // by the send queue's lock)
    private WindowTicket[] tickets;

    SendQueue(QueuePair qp, QpOps ops, QpQueues queues, CompletionQueue cq, QpCapabilities capabilities) {
        this.qp = qp;
        this.ops = ops;
        this.queues = queues;
        this.cq = cq;
        this.capabilities = capabilities;
    }

    CompletableFuture<WorkCompletion> postAsync(WorkRequest request) {
        if (!request.isSignaled()) {
            throw new IllegalArgumentException("postAsync needs a signaled request: an unsignaled one never completes");
        }
        CompletableFuture<WorkCompletion> future = cq.newFuture();
        post(request, future);
        return future;
    }

    void post(WorkRequest wr, CompletableFuture<WorkCompletion> future) {
        qp.resource.checkOpen();
        ScatterGatherList sgl = wr.sgl();
        if (sgl.count() > capabilities.maxSendSge()) {
            throw new IllegalArgumentException(sgl.count() + " scatter/gather entries exceed maxSendSge "
                    + capabilities.maxSendSge() + " of " + qp);
        }
        if (wr.opcode() == Opcode.BIND_MW && wr.window() == null) {
            throw new IllegalArgumentException("a BIND_MW request names no window and region: build it with"
                    + " WorkRequest.bind(window, region, offset, length, access), not opcode(BIND_MW)");
        }
        if (wr.isInline() && sgl.totalLength() > capabilities.maxInlineData()) {
            throw new IllegalArgumentException(sgl.totalLength() + " inline bytes exceed maxInlineData "
                    + capabilities.maxInlineData() + " of " + qp);
        }
        InFlight send = queues.send;
        send.lock.lock();
        try {
            queues.requireAccepts(send, true, cq, qp);
            if (wr.opcode() == Opcode.BIND_MW) {
                postBind(wr, future, send);
                return;
            }
            WindowTicket ticket = wr.opcode() == Opcode.LOCAL_INV ? invalidation(wr.invalidateRkey(), send) : null;
            long id = send.claim(VERB, qp, wr.wrId(), wr.opcode().completion(), sgl, null, future, ticket);
            try {
                ops.postSend(wr, id);
            } catch (RuntimeException e) {
                send.unclaim();
                throw e;
            }
        } finally {
            send.lock.unlock();
        }
    }

    /** The ticket updating the window reached by {@code rkey} when the invalidation completes; null if none is. */
    private WindowTicket invalidation(int rkey, InFlight send) {
        MemoryWindow.State window = qp.pd().windowsByRkey.get(rkey);
        return window == null ? null : ticket(send).invalidate(window, rkey);
    }

    private void postBind(WorkRequest wr, CompletableFuture<WorkCompletion> future, InFlight send) {
        MemoryWindow window = wr.window();
        MemoryRegion region = wr.bindRegion();
        if (window.pd() != qp.pd() || region.pd() != qp.pd()) {
            throw new IllegalArgumentException("cannot bind " + window + " over " + region + " on " + qp
                    + ": window, region and QP must share one protection domain");
        }
        WindowTicket ticket = ticket(send).bind(window, region);
        long id;
        try {
            id = send.claim(VERB, qp, wr.wrId(), WcOpcode.BIND_MW, wr.sgl(), region, future, ticket);
        } catch (RuntimeException e) {
            ticket.completed(false);
            throw e;
        }
        int posted = window.nextRkey(); // taken at the post itself: a bind refused before it takes no key
        ticket.key(posted);
        try {
            ticket.key(ops.bindWindow(window.ops(), region.ops(), region.address() + wr.bindOffset(),
                    wr.bindLength(), wr.bindAccess(), posted, id, wr.isSignaled()));
        } catch (RuntimeException e) {
            window.state().unpost(posted);
            send.unclaim();
            throw e;
        }
    }

    /** The ticket of the slot the next claim takes (caller holds the lock); refuses as the claim would. */
    private WindowTicket ticket(InFlight send) {
        int slot = send.nextSlot(VERB, qp);
        if (tickets == null || slot >= tickets.length) { // grown as the ring's slots are: a quiet QP keeps a few
            int size = Math.min(capabilities.maxSendWr(), Math.max(4, Integer.highestOneBit(slot) << 1));
            tickets = tickets == null ? new WindowTicket[size] : Arrays.copyOf(tickets, size);
        }
        WindowTicket t = tickets[slot];
        return t != null ? t : (tickets[slot] = new WindowTicket(qp));
    }

    /** Outstanding (posted, not yet completed) requests. */
    int outstanding() {
        return queues.send.outstanding();
    }
}
