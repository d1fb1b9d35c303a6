package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.VerbsException;
import java.time.Duration;

/**
 * The owner's side of a session: serves the peer's REQUEST, RENEW and RELEASE through the session's
 * {@link LeaseManager} — on the session's agent thread, in order, since a grant waits for its bind — and tells the peer
 * of every lease it was sent (a GRANT or an OFFER) that the owner ends on its own (REVOKED), once.
 */
final class LeaseAgent {
    private final SessionLink link;
    private final LeaseManager leases;
    private final RdmaArena arena;
    private final LeaseLimits limits;

    LeaseAgent(SessionLink link, LeaseManager leases, RdmaArena arena, LeaseLimits limits) {
        this.link = link;
        this.leases = leases;
        this.arena = arena;
        this.limits = limits;
        leases.onRevocationNotice(lease -> tellEnd(lease, EndReason.OWNER_CLOSED));
    }

    /** Serves a REQUEST: allocates a block and grants it (the agent thread: the grant waits for its bind). */
    void grant(Message.Request r) {
        // Refused before anything is allocated: a peer must not make this side map memory it would refuse anyway.
        if (r.size() > limits.maxBytes()) {
            refuse(r, ErrorCodes.LIMIT_EXCEEDED, "a lease of " + r.size() + " bytes exceeds the per-peer limit of "
                    + limits.maxBytes());
            return;
        }
        if (r.alignment() > LeaseClient.MAX_ALIGNMENT) {
            refuse(r, ErrorCodes.INVALID_REQUEST, "alignment " + r.alignment() + " exceeds " + LeaseClient.MAX_ALIGNMENT);
            return;
        }
        Block block;
        try {
            block = arena.allocateShared(r.size(), r.alignment());
        } catch (IllegalArgumentException | VerbsException | OutOfMemoryError e) { // e.g. the memlock limit
            refuse(r, ErrorCodes.OUT_OF_MEMORY, "cannot allocate " + r.size() + " bytes: " + e.getMessage());
            return;
        }
        Lease lease;
        try {
            lease = leases.grantOwned(block, Duration.ofNanos(r.durationNanos()), Access.of(r.access()));
        } catch (RuntimeException e) { // refused, or the bind failed or timed out: the manager gave the block back
            refuse(r, e instanceof LeaseRefusedException refused ? refused.code() : ErrorCodes.INVALID_REQUEST,
                    String.valueOf(e.getMessage()));
            return;
        }
        announce(lease, new Message.Grant(r.requestId(), lease.id(), lease.address(), lease.length(), lease.rkey(),
                r.durationNanos()));
    }

    void renew(Message.Renew r) {
        Lease lease = leases.lease(r.leaseId());
        if (lease == null) {
            refuse(r, ErrorCodes.UNKNOWN_LEASE, "no active lease " + r.leaseId() + " of yours");
            return;
        }
        try {
            leases.renew(lease, Duration.ofNanos(r.durationNanos()));
            link.tell(new Message.Renewed(r.requestId(), r.leaseId(), r.durationNanos()));
        } catch (LeaseRefusedException e) {
            refuse(r, e.code(), e.getMessage());
        }
    }

    void release(Message.Release r) {
        Lease lease = leases.lease(r.leaseId());
        if (lease == null) { // never granted over this session, or already ended: nothing to revoke
            refuse(r, ErrorCodes.UNKNOWN_LEASE, "no active lease " + r.leaseId() + " of yours");
            return;
        }
        leases.end(lease, EndReason.RELEASED)
                .whenComplete((v, e) -> link.tell(new Message.ReleaseAck(r.requestId(), r.leaseId())));
    }

    private void refuse(Message request, int code, String why) {
        link.tell(new Message.Error(request.requestId(), code, why));
    }

    // ---- telling the peer of ends ----------------------------------------------------------------------------

    /**
     * Sends the peer {@code lease} ({@code sent}: its GRANT or OFFER). When the owner ends it on its own the peer is told
     * (REVOKED) — once: a closed block's lease was told at the close, a grace period before it ends. A release the peer
     * asked for is acked instead. A notice due before the lease was sent (its block was closed, or it expired, while
     * the key was bound) goes right after it: before, the peer would drop the notice and use the lease.
     */
    void announce(Lease lease, Message sent) {
        lease.ended().thenAccept(reason -> {
            if (reason == EndReason.EXPIRED || reason == EndReason.OWNER_CLOSED) tellEnd(lease, reason);
        });
        link.tell(sent);
        if (lease.announced()) {
            EndReason reason = lease.endReason() == EndReason.EXPIRED ? EndReason.EXPIRED : EndReason.OWNER_CLOSED;
            link.tell(new Message.Revoked(link.nextRequestId(), lease.id(), reason.code()));
        }
    }

    private void tellEnd(Lease lease, EndReason reason) {
        if (lease.tell()) link.tell(new Message.Revoked(link.nextRequestId(), lease.id(), reason.code()));
    }
}
