package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.lifecycle.DestroyAction;
import io.mooring.lifecycle.Housekeeper;
import io.mooring.lifecycle.Resource;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceState;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The owner's side of one exposure of (part of) one block: the peer may reach {@code [address, address + length)}
 * through {@link #rkey()} until the lease ends — then access is revoked (window invalidated, its dedicated
 * registration if any deregistered), the owner's own work requests on the block are drained, and only after that is
 * the lease's pin on the block released. The block stays the application's: a lease pins it, so its memory is not
 * reused while the lease lives, and closing the block ends the lease. {@link #close()} ends it now — asking the
 * peer first to finish what it has in flight.
 *
 * <p>The owner may use the block itself while the lease is active (e.g. SEND from it, READ into it, post a
 * receive into it). Such work requests must be posted through {@link #postAsync(QueuePair, WorkRequest)} or
 * {@link #postAsync(QueuePair, ReceiveRequest)}: the lease counts them, refuses new ones once it is ending, and
 * its end waits until every one has completed — successfully, with an error, or flushed because its QP went to
 * ERROR, was reset or destroyed — before the block can be handed to anyone else.
 */
public final class Lease implements AutoCloseable {
    private final LeaseManager manager;
    private final long id;
    private final Block block;
    private final long offset;
    private final long length;
    private final boolean ownsBlock;
    private final Set<Access> access;
    private final long grantedNanos;
    Block.Pin pin;                  // set once pinned, before anyone else sees the lease
    private Exposure exposure;      // set by exposeThrough, before anyone else sees the lease
    /**
     * The lease in the lifecycle graph, a child of its block's chunk region (which cannot go while the lease lives).
     * Its pins are the owner's work requests on the block plus one for the exposure, released once access is revoked;
     * closing it begins the end (no new requests), and it is destroyed — block given back — when the last pin goes.
     */
    private Resource resource;
    /**
     * {@link #EXPOSED}, {@link #ENDING}, {@link #REVOKING}, {@link #REVOKED}, and {@link #GRANTED} if it was exposed
     * before any end (whoever sees the first two set starts the revocation).
     */
    private final AtomicInteger phase = new AtomicInteger();
    private static final int EXPOSED = 1, ENDING = 2, REVOKING = 4, REVOKED = 8, GRANTED = 16;
    /** The session sends the peer this lease (a GRANT or an OFFER), so its holder is asked to stop before its end. */
    private final boolean announced;
    private final Object notices = new Object();
    private boolean sent;                 // guarded by notices: the peer was sent the lease
    private EndReason askOnceSent;        // guarded by notices: an end that began before the lease was sent
    /** Completes once the holder stopped using the lease (its RELEASE), or nobody is to be waited for. */
    private final CompletableFuture<Void> holderStopped = new CompletableFuture<>();
    private volatile EndReason endReason;
    private final CompletableFuture<EndReason> ended = new CompletableFuture<>();
    private volatile long deadlineNanos;
    volatile Housekeeper.Task expiry;

    Lease(LeaseManager manager, long id, Block block, long offset, long length, Set<Access> access, Duration duration,
          boolean ownsBlock, boolean announced) {
        this.manager = manager;
        this.announced = announced;
        this.id = id;
        this.block = block;
        this.offset = offset;
        this.length = length;
        this.ownsBlock = ownsBlock;
        this.access = Set.copyOf(access);
        this.grantedNanos = System.nanoTime();
        this.deadlineNanos = grantedNanos + duration.toNanos();
    }

    /** The peer reaches the lease through {@code made}'s key. */
    void exposeThrough(Exposure made) {
        this.exposure = made;
    }

    /** How the peer reaches the lease; null until the key is made. */
    Exposure exposure() {
        return exposure;
    }

    /** Joins the lifecycle graph under the block's chunk region; {@code onDestroy} gives the block back. */
    void attach(DestroyAction onDestroy) {
        resource = block.region().resource().createChild("lease", "lease " + id + " of " + length + " bytes at 0x"
                + Long.toHexString(address()), onDestroy);
        resource.addPin(); // the exposure's
    }

    /** The lease has ended: its pin is released, and a block it owned (one allocated for a REQUEST) closed. */
    void giveBack() {
        if (pin != null) pin.close();
        if (ownsBlock) block.close();
    }

    public long id() {
        return id;
    }

    /** The block the lease exposes (part of), for local use while the lease is active. */
    public Block block() {
        return block;
    }

    /** Where the exposed bytes start in {@link #block()}. */
    public long offset() {
        return offset;
    }

    public long address() {
        return block.address() + offset;
    }

    public long length() {
        return length;
    }

    /** The key the peer names this block with: its window's, or the chunk region's (WHOLE_REGION). */
    public int rkey() {
        Exposure e = exposure;
        return e == null ? 0 : e.rkey();
    }

    public Set<Access> access() {
        return access;
    }

    /** Time left before the lease expires (negative once past), on this host's monotonic clock. */
    public Duration remaining() {
        return Duration.ofNanos(deadlineNanos - System.nanoTime());
    }

    public boolean isActive() {
        return resource.isOpen();
    }

    /**
     * Posts an owner work request that uses this lease's block, tracked so that the end of the lease waits for
     * its completion before the block is reused. The request must be signaled.
     *
     * @throws IllegalStateException if the lease is ending or ended (nothing is posted)
     */
    public CompletableFuture<WorkCompletion> postAsync(QueuePair qp, WorkRequest request) {
        return tracked(() -> qp.postAsync(request));
    }

    /** Posts a receive into this lease's block, tracked like {@link #postAsync(QueuePair, WorkRequest)}. */
    public CompletableFuture<WorkCompletion> postAsync(QueuePair qp, ReceiveRequest request) {
        return tracked(() -> qp.postAsync(request));
    }

    private CompletableFuture<WorkCompletion> tracked(Supplier<CompletableFuture<WorkCompletion>> post) {
        try {
            resource.addPin();
        } catch (ResourceClosedException e) {
            throw new IllegalStateException("lease " + id + " is ending: no more work requests on its block");
        }
        CompletableFuture<WorkCompletion> done;
        try {
            done = post.get();
        } catch (RuntimeException e) {
            unpin();
            throw e;
        }
        done.whenComplete((wc, error) -> unpin());
        return done;
    }

    /** Owner work requests on the block that have not completed yet. */
    public int inFlight() {
        return (int) (resource.info().pins() - ((phase.get() & REVOKED) == 0 ? 1 : 0));
    }

    /** Completes with the reason once access is revoked and the block given back. */
    public CompletableFuture<EndReason> ended() {
        return ended;
    }

    long grantedNanos() {
        return grantedNanos;
    }

    long deadlineNanos() {
        return deadlineNanos;
    }

    void extendTo(long deadline) {
        deadlineNanos = deadline;
    }

    /**
     * The key is in place: the lease is granted, unless it is already ending — then true, if this caller must revoke
     * the key (whoever comes second of this and the end's {@link #claimRevocation()}).
     */
    boolean exposed() {
        int before = phase.getAndUpdate(p -> (p & ENDING) != 0 ? p | EXPOSED : p | EXPOSED | GRANTED);
        return (before & ENDING) != 0 && claimRevocation();
    }

    /**
     * Claims the end of the lease for {@code reason} and refuses further owner work requests; false if it is already
     * ending. The caller then revokes if {@link #claimRevocation()} says so (the key is in place).
     */
    boolean beginEnd(EndReason reason) {
        int p;
        do {
            p = phase.get();
            if ((p & ENDING) != 0) return false;
        } while (!phase.compareAndSet(p, p | ENDING));
        endReason = reason;
        resource.close();
        return true;
    }

    /** True for exactly one caller, once the lease is both exposed and ending: that caller revokes the key. */
    boolean claimRevocation() {
        int p;
        do {
            p = phase.get();
            if ((p & (EXPOSED | ENDING)) != (EXPOSED | ENDING) || (p & REVOKING) != 0) return false;
        } while (!phase.compareAndSet(p, p | REVOKING));
        return true;
    }

    /** Access is revoked: the exposure's pin goes, and the lease is destroyed once the owner's requests are done. */
    void revoked() {
        phase.getAndUpdate(v -> v | REVOKED);
        unpin();
    }

    /** Removes a pin; the lease has ended once the last one went and its destroy action ran (the block is back). */
    private void unpin() {
        resource.removePin();
        ResourceState state = resource.state();
        if (state == ResourceState.DESTROYED || state == ResourceState.FAILED) ended.complete(endReason);
    }

    EndReason endReason() {
        return endReason;
    }

    /*
     * The holder is asked to stop (REVOKE) after it was sent the lease, never before: it would drop a REVOKE of a lease
     * it does not know, then use the lease and meet the revoked key. Sending the lease and asking run under one lock.
     */

    /**
     * Sends the peer the lease ({@code send}: its GRANT or OFFER); returns the end that began meanwhile, whose REVOKE is
     * due right after (the revocation waits for it), or null.
     */
    EndReason announce(Runnable send) {
        synchronized (notices) {
            send.run();
            sent = true;
            return askOnceSent;
        }
    }

    /**
     * The lease ends for {@code reason}: {@code ask} sends the REVOKE now if the peer has the lease, or {@link #announce}
     * will right after sending it. False if no holder is to be waited for (the session never sends it the lease).
     */
    boolean askHolder(EndReason reason, Runnable ask) {
        synchronized (notices) {
            if (sent) {
                ask.run();
            } else if (announced) {
                askOnceSent = reason;
            }
            return announced;
        }
    }

    /** Completes once the holder stopped using the lease, or nobody is to be waited for any more. */
    CompletableFuture<Void> holderStopped() {
        return holderStopped;
    }

    /** It was handed to the caller of grant (not ended by a failed grant). */
    boolean wasGranted() {
        return (phase.get() & GRANTED) != 0;
    }

    /**
     * Ends the lease and waits until access is revoked and the block given back. A holder the session sent the lease is
     * asked to stop first, and the key is revoked once its accesses in flight have completed (about a round trip), or
     * by force after the endpoint's revoke timeout. The end also waits for the owner's tracked requests on the block,
     * so this blocks as long as one of them is outstanding. Idempotent.
     */
    @Override
    public void close() {
        manager.await.join(() -> manager.endAsync(this, EndReason.RELEASED));
    }

    @Override
    public String toString() {
        return "Lease[" + id + ", " + block + ", rkey 0x" + Integer.toHexString(rkey()) + ", " + access
                + (isActive() ? ", " + remaining().toMillis() + " ms left" : ", ended") + "]";
    }
}
