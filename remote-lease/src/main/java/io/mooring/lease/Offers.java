package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.values.Access;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Leases a session's side makes without being asked, both ways (async-rdma's {@code send_local_mr} and
 * {@code receive_remote_mr}): an offer grants a block and sends the peer an OFFER; the peer's OFFERs wait as
 * {@link RemoteSegment}s for the application in a queue of {@value #BACKLOG} — past it they are released at once.
 */
final class Offers {
    private static final System.Logger LOG = System.getLogger(RdmaSession.class.getName());
    /** Offers received and not yet taken, at most. */
    static final int BACKLOG = 64;

    private final SessionLink link;
    private final LeaseManager leases;
    private final LeaseAgent agent;
    private final LeaseClient client;
    private final Handoff<RemoteSegment> received;
    private final AtomicLong released = new AtomicLong();

    Offers(SessionLink link, LeaseManager leases, LeaseAgent agent, LeaseClient client, CompletionQueue cq) {
        this.link = link;
        this.leases = leases;
        this.agent = agent;
        this.client = client;
        this.received = new Handoff<>(BACKLOG, "an offer", cq::newFuture, () -> { });
    }

    /** Grants {@code [offset, +length)} of {@code block} and offers it to the peer with {@code tag}; never throws. */
    CompletableFuture<Lease> offer(Block block, long offset, long length, Duration duration, Set<Access> access,
                                   long tag) {
        try {
            link.checkUsable();
        } catch (SessionLostException e) {
            return CompletableFuture.failedFuture(e);
        }
        return leases.grantAsync(block, offset, length, duration, access, true).thenApply(lease -> {
            agent.announce(lease, new Message.Offer(link.nextRequestId(), lease.id(), lease.address(), lease.length(),
                    lease.rkey(), Access.mask(access), duration.toNanos(), tag));
            return lease;
        });
    }

    CompletableFuture<RemoteSegment> take() {
        return received.take();
    }

    /** The peer offered a lease: it waits for the application, or is released if {@value #BACKLOG} already wait. */
    void offered(Message.Offer o) {
        RemoteSegment segment = client.offered(o);
        if (!received.offer(segment)) {
            // Released without waiting for the answer: a peer offering faster than the application takes must not
            // fill the table of unanswered requests (a timer each), nor the log — one warning per session.
            long n = released.incrementAndGet();
            LOG.log(n == 1 ? Level.WARNING : Level.DEBUG, "an offer of lease " + o.leaseId() + " from "
                    + link.peerAddress() + " found " + BACKLOG + " offers untaken; released"
                    + (n == 1 ? " (further ones are released without a warning)" : ""));
            segment.discard();
        }
    }

    /** No more offers are taken: waiting callers fail with {@code why}, offers nobody took are released. */
    void close(SessionLostException why) {
        List<RemoteSegment> untaken = received.close(why);
        untaken.forEach(RemoteSegment::discard);
    }
}
