package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.lifecycle.Housekeeper;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.CompletionDispatcher;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.values.Access;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;

/**
 * The owner's side of leasing blocks to one peer over one connected QP: a grant exposes exactly (part of) one block
 * (never the chunk region's rkey, which would expose every neighbour) and pins it, and ending a lease revokes access
 * before the pin is released, so the block's memory is reused only after that.
 *
 * <p>Revocation sequence, whatever ends the lease (release, expiry, the exposure's stage, the block's close, session
 * loss, close): mark it ending → if the owner ends a lease its session sent the peer, ask the holder to stop and wait
 * until it did (its accesses in flight completed) or the session's revoke timeout passed → post LOCAL_INV of its
 * window on the peer's QP and wait for the completion — a window that cannot be invalidated (the QP failed) is
 * deallocated instead, which revokes it too — and
 * (DEDICATED_REGISTRATION) deregister the region it was bound over → wait until the owner's own work requests on the block
 * ({@link Lease#postAsync}) have completed or been flushed → release the pin (close a block the lease owns) →
 * complete {@link Lease#ended()}. Windows that were invalidated cleanly are pooled for the next grant.
 *
 * <p>The QP's send CQ must be polled by a {@link io.mooring.verbs.CompletionDispatcher}: binds and
 * invalidations are posted with futures. Deadlines are this host's monotonic time ({@link System#nanoTime});
 * the owner honours a lease for {@link LeaseLimits#grace()} past its duration.
 */
public final class LeaseManager implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(LeaseManager.class.getName());
    /**
     * Runs the expiries, the ends of closed blocks' leases and the slow-end warnings: each is short and never waits (an
     * end only sends REVOKE and posts the invalidation). A cancelled task leaves its queue at once: every RENEW and
     * every early end cancels one, and a cancelled task left queued would hold its lease until its original deadline.
     */
    private static final Housekeeper TIMER = Housekeeper.shared();
    private static final Duration COMPLETION_WAIT = WindowPool.COMPLETION_WAIT;

    private final LeaseLimits limits;
    private final Isolation isolation;
    private final PeerAccount peer;
    /** How the blocking forms wait. */
    final Await await;
    /** Asks the holder of a lease to stop; completes once it did or may be revoked regardless (none: at once). */
    private volatile BiFunction<Lease, EndReason, CompletableFuture<Void>> stopHolder =
            (lease, reason) -> CompletableFuture.completedFuture(null);
    private final Map<Long, Lease> leases = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();
    private final WindowPool windows;
    private long leasedBytes;                                             // guarded by this
    private boolean closed;                                               // guarded by this: grants refused
    private boolean windowsFreed;                                         // guarded by this: close() ran
    private final AtomicLong granted = new AtomicLong();
    private final AtomicLong released = new AtomicLong();
    private final AtomicLong expired = new AtomicLong();
    private final AtomicLong revoked = new AtomicLong();
    private final AtomicLong refused = new AtomicLong();

    LeaseManager(QueuePair qp, LeaseLimits limits, Isolation isolation, PeerAccount peer) {
        this.windows = new WindowPool(qp);
        this.limits = limits;
        this.isolation = isolation;
        this.peer = peer;
        this.await = new Await(qp.sendCq());
    }

    /** A manager whose isolation is what {@link IsolationProbe} finds for the QP's device. */
    public static LeaseManager create(QueuePair qp, LeaseLimits limits) {
        return create(qp, limits, IsolationProbe.probe(qp.pd()));
    }

    /**
     * A manager with an explicit isolation ({@link Isolation#WHOLE_REGION} is only available this way). Its limits
     * count this manager's leases alone; an {@link RdmaEndpoint} counts them per peer across its sessions.
     */
    public static LeaseManager create(QueuePair qp, LeaseLimits limits, Isolation isolation) {
        return new LeaseManager(qp, limits, isolation, new PeerAccount("the peer of " + qp, 0));
    }

    public Isolation isolation() {
        return isolation;
    }

    /**
     * Exposes {@code block} to the peer for {@code duration} with {@code access}. The lease <em>pins</em> the block: it
     * stays the caller's, several leases (to several peers) may expose it at once, and its memory is not reused while
     * any is live — closing the block ends its leases (each holder is asked to stop first) and frees it once they ended.
     *
     * @throws LeaseRefusedException naming the limit or argument at fault, or if the block is closed
     */
    public Lease grant(Block block, Duration duration, Set<Access> access) {
        return grant(block, 0, block.size(), duration, access);
    }

    /** Exposes {@code [offset, offset + length)} of {@code block}, as {@link #grant(Block, Duration, Set)} does. */
    public Lease grant(Block block, long offset, long length, Duration duration, Set<Access> access) {
        return await.join(() -> grantAsync(block, offset, length, duration, access));
    }

    /**
     * {@link #grant(Block, long, long, Duration, Set)} without waiting for the key: the future completes once the
     * window is bound on the peer's QP, or fails with what the blocking form throws. It never throws itself.
     */
    public CompletableFuture<Lease> grantAsync(Block block, long offset, long length, Duration duration,
                                               Set<Access> access) {
        return grantAsync(block, offset, length, duration, access, false);
    }

    /** A grant the session sends the peer ({@code announced}: an offer), whose holder is asked to stop before its end. */
    CompletableFuture<Lease> grantAsync(Block block, long offset, long length, Duration duration, Set<Access> access,
                                        boolean announced) {
        try {
            if (offset < 0 || length <= 0 || offset > block.size() - length) {
                throw refuse(ErrorCodes.INVALID_REQUEST, "[" + offset + ", +" + length + ") is not inside " + block);
            }
            return grant(block, offset, length, duration, access, false, announced);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * A grant of a block the lease owns (one allocated for a REQUEST): the block is the manager's from the call on —
     * closed when the lease ends, or when the grant fails — so the caller never closes it.
     */
    Lease grantOwned(Block block, Duration duration, Set<Access> access) {
        return await.join(() -> grant(block, 0, block.size(), duration, access, true, true));
    }

    private CompletableFuture<Lease> grant(Block block, long offset, long length, Duration duration, Set<Access> access,
                                           boolean owned, boolean announced) {
        Lease lease;
        try {
            lease = newLease(block, offset, length, duration, access, owned, announced);
        } catch (RuntimeException e) { // no lease took the block: an owned one goes back here
            if (owned) block.close();
            throw e;
        }
        try {
            lease.pin = block.pin(() -> blockClosed(lease));
        } catch (ResourceClosedException | IllegalStateException e) { // closed, or pinned the most it can be
            abandon(lease);
            throw refuse(ErrorCodes.INVALID_REQUEST, "cannot lease " + block + ": " + e.getMessage());
        }
        CompletableFuture<Exposure> exposing;
        try {
            exposing = isolation.expose(lease, windows);
        } catch (RuntimeException e) {
            abandon(lease);
            throw e;
        }
        return exposing.handle((exposure, error) -> {
            if (error == null) {
                lease.exposeThrough(exposure);
                return granted(lease);
            }
            abandon(lease);
            Throwable cause = WindowPool.unwrap(error);
            if (cause instanceof LeaseRefusedException) refused.incrementAndGet(); // the device refused the bind
            return CompletableFuture.<Lease>failedFuture(cause);
        }).thenCompose(grant -> grant);
    }

    /** Checks the grant against the limits and makes its lease, in the graph; from then on its end gives the block back. */
    private Lease newLease(Block block, long offset, long length, Duration duration, Set<Access> access, boolean owned,
                           boolean announced) {
        if (access.isEmpty() || !Access.REMOTE.containsAll(access) || !limits.maxAccess().containsAll(access)) {
            throw refuse(ErrorCodes.INVALID_REQUEST, "a lease needs remote rights within " + limits.maxAccess()
                    + ", not " + access);
        }
        if (duration.isNegative() || duration.isZero() || duration.compareTo(limits.maxDuration()) > 0) {
            throw refuse(ErrorCodes.LIMIT_EXCEEDED, "lease duration " + duration + " is outside (0, "
                    + limits.maxDuration() + "]");
        }
        var range = new PeerAccount.Range(block.address() + offset, length);
        reserve(range);
        Lease lease = new Lease(this, ids.incrementAndGet(), block, offset, length, access, duration, owned, announced);
        try {
            lease.attach(() -> finishEnd(lease));
        } catch (RuntimeException e) { // the chunk region is closing: so is the arena
            unreserve(range);
            throw refuse(ErrorCodes.SHUTTING_DOWN, "cannot lease " + block + ": " + e.getMessage());
        }
        return lease;
    }

    /**
     * The key is in place: the lease is granted — unless its block was closed or the session lost meanwhile, when it
     * is revoked at once and refused.
     */
    private CompletableFuture<Lease> granted(Lease lease) {
        leases.put(lease.id(), lease); // before it is granted: an end that follows at once finds it here
        boolean stopped;
        synchronized (this) {
            stopped = closed;
        }
        if (stopped) end(lease, EndReason.OWNER_CLOSED, false); // endAll may have run before the put: it missed it
        if (lease.exposed()) { // it began to end (its block was closed, or the line above) while the key was made
            return revoke(lease).thenApply(v -> {
                throw refuse(stopped ? ErrorCodes.SHUTTING_DOWN : ErrorCodes.INVALID_REQUEST, stopped
                        ? "the lease manager stopped granting during the grant" : "the block was closed during the grant");
            });
        }
        granted.incrementAndGet();
        schedule(lease);
        return CompletableFuture.completedFuture(lease);
    }

    /** Ends a lease whose grant failed before anything was exposed: there is nothing to revoke. */
    private static void abandon(Lease lease) {
        lease.beginEnd(EndReason.OWNER_CLOSED);
        lease.revoked();
    }

    /**
     * The application closed a leased block: the lease ends as {@link Lease#close()} ends it — its holder is asked to
     * stop and finish its accesses in flight before the key is revoked. The memory waits for the revocation. Not in the
     * closing thread: the end may give the block's pin back, and the block is in the middle of its close.
     */
    private void blockClosed(Lease lease) {
        if (lease.isActive()) TIMER.schedule(() -> endAsync(lease, EndReason.OWNER_CLOSED), Duration.ZERO);
    }

    /**
     * How a holder is asked to stop before its lease's key is revoked (a session: REVOKE, then the holder's RELEASE or
     * the revoke timeout); the future completes when the key may be revoked.
     */
    void onEnding(BiFunction<Lease, EndReason, CompletableFuture<Void>> stopHolder) {
        this.stopHolder = stopHolder;
    }

    /**
     * {@link #grant(Block, Duration, Set)}, and the lease also ends ({@link EndReason#DONE}) when {@code done}
     * completes (async-rdma's {@code reserve(timeout, future)}): whichever comes first.
     */
    public Lease grant(Block block, Duration duration, Set<Access> access, CompletionStage<?> done) {
        Lease lease = grant(block, duration, access);
        done.whenComplete((value, error) -> endAsync(lease, EndReason.DONE));
        return lease;
    }

    private synchronized void reserve(PeerAccount.Range range) {
        if (closed) throw refuse(ErrorCodes.SHUTTING_DOWN, "the lease manager is closed");
        try {
            peer.reserve(range, limits);
        } catch (LeaseRefusedException e) {
            refused.incrementAndGet();
            throw e;
        }
        leasedBytes += range.length();
    }

    private synchronized void unreserve(PeerAccount.Range range) {
        peer.unreserve(range);
        leasedBytes -= range.length();
    }

    /** Refuses every grant from now on (the session is lost or closing); the leases are ended separately. */
    synchronized void stopGranting() {
        closed = true;
        windows.stop();
    }

    private LeaseRefusedException refuse(int code, String message) {
        refused.incrementAndGet();
        return new LeaseRefusedException(code, message);
    }

    private void schedule(Lease lease) {
        long delay = lease.deadlineNanos() - System.nanoTime() + limits.grace().toNanos(); // past already: now
        lease.expiry = TIMER.schedule(() -> endAsync(lease, EndReason.EXPIRED), Duration.ofNanos(Math.max(0, delay)));
    }

    /**
     * The lease with that id (e.g. the peer's {@code RemoteSegment.leaseId()}), or null if it is not this
     * manager's or no longer active.
     */
    public Lease lease(long id) {
        return leases.get(id);
    }

    /**
     * Extends a lease to {@code duration} from now, within the per-grant and lifetime limits.
     *
     * @throws LeaseRefusedException if the lease is gone or a limit forbids it
     */
    public void renew(Lease lease, Duration duration) {
        if (!lease.isActive() || leases.get(lease.id()) != lease) {
            throw refuse(ErrorCodes.UNKNOWN_LEASE, "lease " + lease.id() + " is not active");
        }
        if (duration.isNegative() || duration.isZero() || duration.compareTo(limits.maxDuration()) > 0) {
            throw refuse(ErrorCodes.LIMIT_EXCEEDED, "renewal " + duration + " is outside (0, " + limits.maxDuration() + "]");
        }
        long deadline = System.nanoTime() + duration.toNanos();
        if (deadline - lease.grantedNanos() > limits.maxLifetime().toNanos()) {
            throw refuse(ErrorCodes.LIMIT_EXCEEDED, "renewing lease " + lease.id() + " by " + duration
                    + " would exceed its lifetime limit of " + limits.maxLifetime());
        }
        lease.expiry.cancel();
        lease.extendTo(deadline);
        schedule(lease);
    }

    /**
     * Ends a lease: asks its holder to stop if the session sent it the lease (and waits until it did, at most the
     * session's revoke timeout), revokes access, then gives the block back once the owner's work requests on it are
     * done. Idempotent: a second call returns a future that completes when the first one's end is done.
     */
    public CompletableFuture<Void> endAsync(Lease lease, EndReason reason) {
        return end(lease, reason, true);
    }

    /** {@link #endAsync(Lease, EndReason)}; without {@code askHolder} (it released the lease, or is gone) it is not waited for. */
    CompletableFuture<Void> end(Lease lease, EndReason reason, boolean askHolder) {
        if (!askHolder) lease.holderStopped().complete(null);
        if (lease.beginEnd(reason)) {
            if (lease.expiry != null) lease.expiry.cancel();
            if (lease.claimRevocation()) {
                CompletableFuture<Void> stopped;
                try {
                    stopped = askHolder ? stopHolder.apply(lease, reason) : CompletableFuture.completedFuture(null);
                } catch (RuntimeException e) { // the request could not go out: revoke regardless
                    stopped = CompletableFuture.completedFuture(null);
                }
                stopped.whenComplete((v, e) -> revoke(lease));
            }
        }
        return lease.ended().thenRun(() -> {});
    }

    /**
     * Revokes the lease's key (its {@link Exposure}), then drops the exposure's pin on the lease: it is destroyed when
     * the owner's requests on the block are done too.
     */
    private CompletableFuture<Void> revoke(Lease lease) {
        Exposure exposure = lease.exposure();
        CompletableFuture<Void> revoked = exposure == null ? CompletableFuture.completedFuture(null) : exposure.revoke();
        return revoked.thenRun(() -> {
            lease.revoked();
            if (!lease.ended().isDone()) warnIfSlow(lease);
        });
    }

    /**
     * The lease's destroy action, once access is revoked and no owner request uses the block: gives it back. The lease's
     * {@link Lease#ended()} completes after it, once the graph has detached the lease from its chunk region.
     */
    private void finishEnd(Lease lease) {
        var range = new PeerAccount.Range(lease.address(), lease.length()); // before the block may be closed
        lease.giveBack();
        unreserve(range);
        leases.remove(lease.id(), lease);
        EndReason reason = lease.endReason();
        if (lease.wasGranted()) {
            (switch (reason) {
                case RELEASED -> released;
                case EXPIRED -> expired;
                default -> revoked;
            }).incrementAndGet();
        }
    }

    /**
     * Logs a lease whose end still waits for owner work requests after a while. Those complete, fail, or are flushed
     * when their QP goes to ERROR, is reset or destroyed — never silently dropped, so an end always finishes. Until then
     * the block stays out of the arena.
     */
    private static void warnIfSlow(Lease lease) {
        var warning = TIMER.schedule(() -> LOG.log(System.Logger.Level.WARNING, "lease " + lease.id() + ": "
                + lease.inFlight() + " owner work requests on its block still in flight after " + COMPLETION_WAIT
                + "; the block stays out of the arena until they complete or their QP is reset or destroyed"),
                COMPLETION_WAIT);
        lease.ended().whenComplete((v, e) -> warning.cancel());
    }

    /**
     * Ends every lease with {@code reason} (e.g. the session to the peer was lost) and waits for the ends. A lease
     * whose owner work requests are still in flight after the wait is left draining (logged): access is revoked,
     * and its block comes back when they complete.
     */
    public void endAll(EndReason reason) {
        CompletionDispatcher.checkMayWait();
        List<CompletableFuture<Void>> ends = new ArrayList<>();
        for (Lease l : leases.values()) ends.add(end(l, reason, false)); // no holder to wait for: it is gone
        try {
            CompletableFuture.allOf(ends.toArray(CompletableFuture[]::new))
                    .get(2 * COMPLETION_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            LOG.log(System.Logger.Level.WARNING, ends.stream().filter(f -> !f.isDone()).count()
                    + " leases still drain owner work requests; their blocks come back when those complete");
        } catch (ExecutionException e) {
            throw new IllegalStateException("ending leases failed", e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    public LeaseStats stats() {
        long bytes;
        synchronized (this) {
            bytes = leasedBytes;
        }
        return new LeaseStatsSnapshot(isolation, leases.size(), bytes, granted.get(), released.get(), expired.get(),
                revoked.get(), refused.get(), windows.pooled());
    }

    /** Ends every lease (OWNER_CLOSED), waits until access is revoked, and frees the pooled windows. */
    @Override
    public void close() {
        synchronized (this) {
            if (windowsFreed) return;
            closed = true;
            windowsFreed = true;
        }
        windows.stop(); // windows invalidated from now on are deallocated
        endAll(EndReason.OWNER_CLOSED);
        windows.close();
    }
}
