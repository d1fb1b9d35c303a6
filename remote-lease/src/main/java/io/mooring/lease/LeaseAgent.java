package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.VerbsException;
import java.lang.System.Logger.Level;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The owner's side of a session: serves the peer's REQUEST, RENEW and RELEASE through the session's
 * {@link LeaseManager} — on the session's agent thread, in order, since a grant waits for its bind — and, before the
 * owner ends on its own a lease the peer was sent (a GRANT or an OFFER), asks the peer to stop using it (REVOKE): the
 * key is revoked once the peer's RELEASE says its accesses in flight are done, or by force after the revoke timeout.
 */
final class LeaseAgent {
    private static final System.Logger LOG = System.getLogger(RdmaSession.class.getName());

    private final SessionLink link;
    private final LeaseManager leases;
    private final RdmaArena arena;
    private final LeaseLimits limits;
    private final Duration revokeTimeout;
    private final AtomicLong forced = new AtomicLong();

    LeaseAgent(SessionLink link, LeaseManager leases, RdmaArena arena, LeaseLimits limits, Duration revokeTimeout) {
        this.link = link;
        this.leases = leases;
        this.arena = arena;
        this.limits = limits;
        this.revokeTimeout = revokeTimeout;
        leases.onEnding(this::stopHolder);
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
        // Also the answer to a REVOKE: the holder's accesses are done, the key may go.
        leases.end(lease, EndReason.RELEASED, false)
                .whenComplete((v, e) -> link.tell(new Message.ReleaseAck(r.requestId(), r.leaseId())));
    }

    private void refuse(Message request, int code, String why) {
        link.tell(new Message.Error(request.requestId(), code, why));
    }

    // ---- asking the holder to stop --------------------------------------------------------------------------

    /**
     * Sends the peer {@code lease} ({@code sent}: its GRANT or OFFER). If the owner began to end it meanwhile (its block
     * was closed while the key was bound), the REVOKE follows at once: the peer learns of the lease, then that it ends.
     */
    void announce(Lease lease, Message sent) {
        EndReason ending = lease.announce(() -> link.tell(sent));
        if (ending != null) link.tell(revoke(lease, ending));
    }

    /**
     * The owner ends {@code lease} on its own: the holder is asked to stop (REVOKE) unless it never had the lease or the
     * session is down; the future completes when the key may be revoked — on the holder's RELEASE, or after the revoke
     * timeout: then by force, which fails any access of the holder's still in flight and may end this session.
     */
    private CompletableFuture<Void> stopHolder(Lease lease, EndReason reason) {
        if (!link.isUp() || !lease.askHolder(reason, () -> link.tell(revoke(lease, reason)))) {
            return CompletableFuture.completedFuture(null);
        }
        return lease.holderStopped().orTimeout(revokeTimeout.toNanos(), TimeUnit.NANOSECONDS).exceptionally(e -> {
            long n = forced.incrementAndGet();
            LOG.log(n == 1 ? Level.WARNING : Level.DEBUG, link.peerAddress() + " did not release lease " + lease.id()
                    + " within " + revokeTimeout + " of being asked to: revoked by force"
                    + (n == 1 ? " (further ones on this session without a warning)" : ""));
            return null;
        });
    }

    private Message.Revoke revoke(Lease lease, EndReason reason) {
        return new Message.Revoke(link.nextRequestId(), lease.id(), reason.code());
    }
}
