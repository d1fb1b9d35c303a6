package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;

/**
 * The agent's messages over the session's control QP: SENDs from a small pool of send buffers, and receives
 * pre-posted into buffers from the arena. Buffers are shared-scope blocks: the dispatcher and the agent touch them,
 * not the thread that allocated them.
 *
 * <p>Every buffer is a slot of one shared-scope block ({@value #RECEIVES} receives, then {@value #SENDS} sends): one
 * allocation, one arena scope per session rather than one per buffer (a session end's heap, issue 26).
 *
 * <p>Neither direction can grow without bound or block a shared thread. Answers, offers, revocations and credits are
 * served as they arrive; a receive holding a request for the agent is reposted only once the agent takes it, so a
 * peer that sends requests faster than the agent serves meets RNR on its own QP, and the agent's queue never holds
 * more than {@link #RECEIVES} messages. A send never waits for a buffer: it queues in an outbox, and a peer that leaves
 * {@link #OUTBOX} answers, requests and credits untaken is failing the session. Messages about one lease — its OFFER,
 * REVOKE, RELEASE and the RELEASE's acknowledgement — are not counted there: each lease sends at most one of each, so
 * the lease limits bound them, and an owner ending all of a peer's leases at once sends that many REVOKEs in a burst.
 */
final class ControlChannel implements AutoCloseable {
    static final int RECEIVES = 16;
    static final int SENDS = 16;
    static final int OUTBOX = 64;

    private record Queued(Message message, CompletableFuture<WorkCompletion> sent) {}

    private final QueuePair qp;
    private static final int SLOT = MessageCodec.MAX_MESSAGE;

    private final Block buffers;
    /** Filled afresh for each post, each guarded by itself: the QP copies a request as it is posted. */
    private final ReceiveRequest receiveRequest = new ReceiveRequest();
    private final WorkRequest sendRequest = new WorkRequest();
    private final ArrayDeque<Integer> freeSendSlots = new ArrayDeque<>(); // guarded by this
    private final ArrayDeque<Queued> outbox = new ArrayDeque<>(2);          // guarded by this
    /** Queued messages that no lease bounds, guarded by this. */
    private int unboundQueued;

    /** @throws RuntimeException if the arena cannot serve the buffers (memlock): none is kept then */
    ControlChannel(QueuePair qp, RdmaArena arena) {
        this.qp = qp;
        this.buffers = arena.allocateShared((long) (RECEIVES + SENDS) * SLOT, 8);
        for (int i = 0; i < SENDS; i++) freeSendSlots.add(RECEIVES + i);
    }

    /** Posts every receive buffer; their completions reach {@link #received}. */
    void start() {
        for (int i = 0; i < RECEIVES; i++) repost(i);
    }

    /** Gives the receive buffer {@code slot} back to the QP, once its message was decoded. */
    void repost(int slot) {
        synchronized (receiveRequest) {
            qp.post(receiveRequest.reset().local(buffers.region(), offset(slot), SLOT).wrId(slot));
        }
    }

    /** The {@code length} bytes received into {@code slot}; valid until {@link #repost} of the slot. */
    MemorySegment received(int slot, int length) {
        return buffers.segment().asSlice((long) slot * SLOT, length);
    }

    /**
     * Encodes and SENDs {@code m} now if a send buffer is free, else queues it; the future completes when the send
     * completed, exceptionally if the outbox is full (the peer takes no control messages).
     */
    CompletableFuture<WorkCompletion> send(Message m) {
        Integer b;
        synchronized (this) {
            b = freeSendSlots.poll();
            if (b == null) {
                boolean unbound = !isAboutALease(m);
                if (unbound && unboundQueued >= OUTBOX) {
                    return CompletableFuture.failedFuture(new IllegalStateException("the peer has left " + OUTBOX
                            + " control messages untaken"));
                }
                if (unbound) unboundQueued++;
                CompletableFuture<WorkCompletion> sent = qp.sendCq().newFuture();
                outbox.add(new Queued(m, sent));
                return sent;
            }
        }
        return post(b, m);
    }

    private CompletableFuture<WorkCompletion> post(int slot, Message m) {
        int length = MessageCodec.encode(m, buffers.segment().asSlice((long) slot * SLOT, SLOT));
        CompletableFuture<WorkCompletion> sent;
        try {
            synchronized (sendRequest) {
                sent = qp.postAsync(sendRequest.reset().local(buffers.region(), offset(slot), length));
            }
        } catch (RuntimeException e) {
            sent = CompletableFuture.failedFuture(e);
        }
        sent.whenComplete((wc, e) -> recycle(slot));
        return sent;
    }

    /** Where {@code slot} lies in the buffers' region. */
    private long offset(int slot) {
        return buffers.regionOffset() + (long) slot * SLOT;
    }

    /** A send buffer is free again: it carries the oldest queued message, or waits for the next send. */
    private void recycle(int slot) {
        Queued next;
        synchronized (this) {
            next = outbox.poll();
            if (next == null) {
                freeSendSlots.add(slot);
                return;
            }
            if (!isAboutALease(next.message())) unboundQueued--;
        }
        post(slot, next.message()).whenComplete((wc, e) -> {
            if (e != null) next.sent().completeExceptionally(e);
            else next.sent().complete(wc);
        });
    }

    private static boolean isAboutALease(Message m) {
        return m instanceof Message.Offer || m instanceof Message.Revoke || m instanceof Message.Release
                || m instanceof Message.ReleaseAck;
    }

    /** Frees the buffers; call after the QP is destroyed (nothing posted may be in flight). */
    @Override
    public void close() {
        buffers.close();
        synchronized (this) {
            outbox.forEach(q -> q.sent().completeExceptionally(new SessionLostException("the session closed")));
            outbox.clear();
        }
    }
}
