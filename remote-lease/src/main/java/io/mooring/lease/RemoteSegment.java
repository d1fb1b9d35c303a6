package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.lifecycle.DestroyAction;
import io.mooring.lifecycle.MooringTimeoutException;
import io.mooring.lifecycle.Resource;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.Opcode;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The holder's side of a lease: a block of the peer's memory this side may access until the lease ends.
 * Every operation checks first — before anything is posted — that the segment is open (after {@link #close()}:
 * {@link ResourceClosedException}), the session alive, the lease not revoked ({@link LeaseRevokedException}) and
 * the local deadline (the owner's duration minus a margin, on this host's monotonic clock) not passed
 * ({@link LeaseExpiredException}).
 *
 * <p>The owner ends a lease it gave by asking first: from that moment the segment refuses new accesses, {@link #revoked()}
 * completes, and once the accesses in flight have completed the lease is released — only then does the owner revoke the
 * key, so no access of this side meets a revoked key and the session goes on. {@link #close()} likewise waits for the
 * accesses in flight, then sends RELEASE and returns when the owner acknowledged it. A segment is a resource of the
 * lifecycle graph, a child of its session's: one dropped without close is reported as a leak and released through the
 * graph's Cleaner; the session's end closes those still open.
 */
public final class RemoteSegment implements AutoCloseable {

    /** What the session and the Cleaner know about the lease: never the handle itself. */
    static final class State {
        final long leaseId;
        volatile long deadlineNanos;
        final AtomicBoolean closed = new AtomicBoolean();
        private final CompletableFuture<EndReason> revoked = new CompletableFuture<>();
        /** Accesses posted (or about to be) and not completed; with {@link #stopping}, a Dekker pair: see enter/stop. */
        private final AtomicInteger inFlight = new AtomicInteger();
        private volatile boolean stopping;
        private final CompletableFuture<Void> drained = new CompletableFuture<>();
        /**
         * Completes once the lease is released — the owner acknowledged the RELEASE (it no longer counts the lease
         * against this host's limits), or nothing is to be waited for (the session ended, the RELEASE went out unasked)
         * — whoever sent the RELEASE: a REVOKE's answer or {@link #closeAsync()}.
         */
        final CompletableFuture<Void> released;

        State(long leaseId, long deadlineNanos, CompletableFuture<Void> released) {
            this.leaseId = leaseId;
            this.deadlineNanos = deadlineNanos;
            this.released = released;
        }

        /** The owner asked to end the lease, or the session ended: no new accesses; completes once none is in flight. */
        CompletableFuture<Void> revoke(EndReason reason) {
            revoked.complete(reason);
            return stop();
        }

        /** No new accesses from now on; completes once those in flight have completed. */
        CompletableFuture<Void> stop() {
            stopping = true;
            if (inFlight.get() == 0) drained.complete(null);
            return drained;
        }

        /**
         * An access begins: false if the lease stops (then nothing may be posted). Counted before the flag is read, and
         * {@link #stop} sets the flag before it reads the count: one of the two sees the other.
         */
        boolean enter() {
            inFlight.incrementAndGet();
            if (!stopping) return true;
            exit();
            return false;
        }

        void exit() {
            if (inFlight.decrementAndGet() == 0 && stopping) drained.complete(null);
        }

        /** Why the owner revoked the lease, or null. */
        EndReason revokedFor() {
            return revoked.getNow(null);
        }
    }

    /** The destroy action, which does something only for a dropped segment: holds the state, never the segment. */
    record Release(LeaseClient client, State state) implements DestroyAction {
        @Override
        public void destroy() {
            if (state.closed.getAndSet(true)) return;
            client.leaked();
            state.stop().thenRun(() -> { // an async access may still be in flight
                try {
                    client.release(state, false);
                } catch (RuntimeException e) {
                    // the session is gone: its end revoked the lease already
                }
            });
        }
    }

    private static final long MIN_TRANSFER_NANOS = 1_000_000;

    private final LeaseClient client;
    private final State state;
    private final long address;
    private final long length;
    private final int rkey;
    private final Set<Access> access;
    private final long tag;
    private final Resource resource;

    RemoteSegment(LeaseClient client, State state, long address, long length, int rkey, Set<Access> access, long tag) {
        this.client = client;
        this.state = state;
        this.address = address;
        this.length = length;
        this.rkey = rkey;
        this.access = access;
        this.tag = tag;
        this.resource = client.track(state);
    }

    /**
     * What the owner said the lease is for, when it offered it ({@link RdmaSession#offer(Block, Duration, Set, long)}):
     * a key's hash, a page number, a table's id; 0 for a lease this side asked for, or one offered without a tag.
     */
    public long tag() {
        return tag;
    }

    public long leaseId() {
        return state.leaseId;
    }

    public long length() {
        return length;
    }

    /** The leased block's address in the owner's memory. */
    public long address() {
        return address;
    }

    /** The key the owner granted; it stops working when the lease ends, whatever this side does. */
    public int rkey() {
        return rkey;
    }

    /**
     * Extends the lease to {@code duration} from now, if the owner agrees (within its per-grant and lifetime
     * limits); the local deadline moves accordingly, again a margin before the owner's.
     *
     * @throws LeaseRefusedException   with the owner's reason
     * @throws FlowControlException    if {@value LeaseClient#MAX_PENDING} requests already wait for the owner's answer
     * @throws MooringTimeoutException if the owner did not answer within the endpoint's
     *         {@link RdmaEndpoint#requestTimeout()}: the session goes on, and the local deadline stays where it was
     *         (the owner may have renewed the lease all the same)
     */
    public void renew(Duration duration) {
        client.await.join(() -> renewAsync(duration));
    }

    /**
     * {@link #renew} without waiting: the future fails with the same exceptions; {@link FlowControlException} (too many
     * requests wait for the owner's answer) is thrown at once.
     */
    public CompletableFuture<Void> renewAsync(Duration duration) {
        checkOpen();
        EndReason revoked = state.revokedFor();
        if (revoked != null) throw new LeaseRevokedException(state.leaseId, revoked);
        return client.renew(state, duration, System.nanoTime());
    }

    /**
     * Completes with the owner's reason when it asks to end the lease — it closed the lease or its block, or the lease
     * expired on its side — or with {@link EndReason#SESSION_LOST} when the session ends; from then on accesses fail
     * with {@link LeaseRevokedException}, and the lease is released once those in flight have completed. It completes
     * on the session's dispatcher: a callback must not block (use the async forms, e.g. {@link #closeAsync()}).
     * It never completes for a segment this side closes.
     */
    public CompletableFuture<EndReason> revoked() {
        return state.revoked.copy();
    }

    /**
     * Time left to post operations before the local deadline (negative once past), on this host's monotonic clock:
     * renew before it runs out. The owner's deadline is a margin later.
     */
    public Duration remaining() {
        return Duration.ofNanos(state.deadlineNanos - System.nanoTime());
    }

    /** Whether operations may still be posted (open, not revoked, before the local deadline, session alive). */
    public boolean isUsable() {
        return !state.closed.get() && !state.stopping && System.nanoTime() < state.deadlineNanos
                && client.lostReason() == null;
    }

    /** Writes all of {@code src} at {@code offset} and waits for the completion. */
    public void write(Block src, long offset) {
        client.await.join(() -> writeAsync(src, offset));
    }

    public CompletableFuture<WorkCompletion> writeAsync(Block src, long offset) {
        check(Access.REMOTE_WRITE, offset, src.size());
        WorkRequest write = WorkRequest.write(src.region(), src.regionOffset(), messageLength(src))
                .remote(address + offset, rkey);
        return tracked(() -> client.queuePair().postAsync(write));
    }

    /**
     * Writes all of {@code src} at {@code offset} and consumes one of the owner's message receives with
     * {@code immediate}, which its {@link RdmaSession#receiveWriteImmAsync} returns once the data is in place
     * (async-rdma's {@code write_with_imm}). Spends a message credit, as a send does.
     */
    public CompletableFuture<WorkCompletion> writeWithImmAsync(Block src, long offset, int immediate) {
        check(Access.REMOTE_WRITE, offset, src.size());
        WorkRequest write = WorkRequest.write(src.region(), src.regionOffset(), messageLength(src))
                .opcode(Opcode.RDMA_WRITE_WITH_IMM).immediate(immediate).remote(address + offset, rkey);
        return tracked(() -> client.writeWithImm(write));
    }

    /** {@link #writeWithImmAsync} and waits for its completion. */
    public void writeWithImm(Block src, long offset, int immediate) {
        client.await.join(() -> writeWithImmAsync(src, offset, immediate));
    }

    /** Reads {@code dst.size()} bytes at {@code offset} into {@code dst} and waits. */
    public void read(Block dst, long offset) {
        client.await.join(() -> readAsync(dst, offset));
    }

    public CompletableFuture<WorkCompletion> readAsync(Block dst, long offset) {
        check(Access.REMOTE_READ, offset, dst.size());
        checkLocallyWritable(dst, dst.size(), "a READ's destination");
        WorkRequest read = WorkRequest.read(dst.region(), dst.regionOffset(), messageLength(dst))
                .remote(address + offset, rkey);
        return tracked(() -> client.queuePair().postAsync(read));
    }

    /**
     * Compares the 8 bytes at {@code offset} with {@code expected} and swaps in {@code swap} if equal; returns the
     * value found. {@code result} (at least 8 bytes, in memory the local NIC may write) receives it too.
     */
    public long compareAndSwap(Block result, long offset, long expected, long swap) {
        client.await.join(() -> compareAndSwapAsync(result, offset, expected, swap));
        return result.segment().get(ValueLayout.JAVA_LONG, 0);
    }

    /** {@link #compareAndSwap} without waiting: the value found is in {@code result}'s first 8 bytes on completion. */
    public CompletableFuture<WorkCompletion> compareAndSwapAsync(Block result, long offset, long expected, long swap) {
        checkAtomic(result, offset);
        WorkRequest cas = WorkRequest.compareAndSwap(result.region(), result.regionOffset(), address + offset, rkey,
                expected, swap);
        return tracked(() -> client.queuePair().postAsync(cas));
    }

    /** Adds {@code add} to the 8 bytes at {@code offset}; returns the value before. */
    public long fetchAndAdd(Block result, long offset, long add) {
        client.await.join(() -> fetchAndAddAsync(result, offset, add));
        return result.segment().get(ValueLayout.JAVA_LONG, 0);
    }

    /** {@link #fetchAndAdd} without waiting: the value before is in {@code result}'s first 8 bytes on completion. */
    public CompletableFuture<WorkCompletion> fetchAndAddAsync(Block result, long offset, long add) {
        checkAtomic(result, offset);
        WorkRequest faa = WorkRequest.fetchAndAdd(result.region(), result.regionOffset(), address + offset, rkey, add);
        return tracked(() -> client.queuePair().postAsync(faa));
    }

    /**
     * Posts an access that passed its checks, counted in flight until it completes: the lease is released (on a REVOKE,
     * or a close) only once none is. One that finds the lease stopping is refused, as the checks would now refuse it.
     */
    private CompletableFuture<WorkCompletion> tracked(Supplier<CompletableFuture<WorkCompletion>> post) {
        if (!state.enter()) {
            checkOpen();
            throw new LeaseRevokedException(state.leaseId, state.revokedFor());
        }
        CompletableFuture<WorkCompletion> done;
        try {
            done = post.get();
        } catch (RuntimeException e) {
            state.exit();
            throw e;
        }
        done.whenComplete((wc, e) -> state.exit());
        return done;
    }

    private void checkOpen() {
        if (state.closed.get()) {
            throw new ResourceClosedException(resource.info(), "remote segment of lease " + state.leaseId
                    + " is closed");
        }
    }

    private void check(Access right, long offset, long bytes) {
        checkOpen();
        client.checkUsable();
        EndReason revoked = state.revokedFor();
        if (revoked != null) throw new LeaseRevokedException(state.leaseId, revoked);
        long left = state.deadlineNanos - System.nanoTime();
        if (left <= 0) {
            throw new LeaseExpiredException(state.leaseId, "lease " + state.leaseId
                    + " has expired (locally, a margin before the owner's deadline)");
        }
        if (left < transferBoundNanos(bytes)) {
            throw new LeaseExpiredException(state.leaseId, "lease " + state.leaseId + " ends in " + left / 1000
                    + " µs, too soon for " + bytes + " bytes to move (allowed: " + transferBoundNanos(bytes) / 1000
                    + " µs): renew it first");
        }
        if (!access.contains(right)) throw new IllegalStateException("lease " + state.leaseId + " grants " + access + ", not " + right);
        if (offset < 0 || bytes < 0 || offset > length - bytes) {
            throw new IndexOutOfBoundsException("[" + offset + ", +" + bytes + ") is outside the " + length + "-byte lease " + state.leaseId);
        }
    }

    /**
     * How long an operation of {@code bytes} may take, for the deadline check: the owner asks this side to stop at its
     * deadline plus the grace and revokes by force if the answer is late, which fails an operation still in flight on
     * the NIC and ends the session — so one that might still run then is refused here. Generous on purpose (1 ms plus
     * 100 MB/s): the owner's grace covers the rest.
     */
    static long transferBoundNanos(long bytes) {
        return MIN_TRANSFER_NANOS + bytes * 10;
    }

    /*
     * The checks below refuse locally what the NIC would refuse with an error completion: an error moves the session's
     * QP to ERROR, which ends the session and every lease on it, so one bad call must never reach the NIC.
     */

    /** An atomic targets 8 aligned bytes (else REM_INV_REQ_ERR) and writes its result into 8 local bytes. */
    private void checkAtomic(Block result, long offset) {
        check(Access.REMOTE_ATOMIC, offset, Long.BYTES);
        if ((address + offset) % Long.BYTES != 0) {
            throw new IllegalArgumentException("an atomic needs an 8-byte aligned target: offset " + offset
                    + " of lease " + state.leaseId + " is address 0x" + Long.toHexString(address + offset));
        }
        checkLocallyWritable(result, Long.BYTES, "an atomic's result");
    }

    /** The local NIC writes {@code bytes} into {@code block} (else LOC_PROT_ERR). */
    private static void checkLocallyWritable(Block block, long bytes, String what) {
        if (block.size() < bytes) {
            throw new IllegalArgumentException(what + " needs " + bytes + " bytes, " + block + " has " + block.size());
        }
        if (!block.region().access().contains(Access.LOCAL_WRITE)) {
            throw new IllegalArgumentException(what + " must be locally writable: " + block + " is in a region with "
                    + block.region().access());
        }
    }

    /** One work request carries at most 2^31 - 1 bytes (its length is a 32-bit field). */
    private static int messageLength(Block block) {
        if (block.size() > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("one READ or WRITE moves at most " + Integer.MAX_VALUE + " bytes, "
                    + block + " has " + block.size() + ": split it");
        }
        return (int) block.size();
    }

    /**
     * Refuses new accesses, waits for those in flight, then releases the lease and waits for the owner's acknowledgement
     * (access is revoked then, and the lease no longer counts against this host's limits with the owner) — unless
     * {@value LeaseClient#MAX_PENDING} requests of the session already wait for the owner's answer: then the RELEASE
     * goes out without waiting, as a dropped segment's does. A segment the owner revoked released itself once its
     * accesses were done: this waits for that release's acknowledgement, so a lease asked for next is not refused for
     * one the owner still counts. Idempotent.
     *
     * @throws MooringTimeoutException if the owner did not acknowledge the release within the endpoint's
     *         {@link RdmaEndpoint#requestTimeout()}: the segment is closed all the same and the session goes on, but
     *         the owner may count the lease against this host's limits until its duration ends
     */
    @Override
    public void close() {
        client.await.join(() -> closeAsync());
    }

    /** {@link #close()} without waiting: completes when the owner acknowledged the release. */
    public CompletableFuture<Void> closeAsync() {
        if (state.closed.getAndSet(true)) return state.released.copy();
        try {
            return state.stop().thenCompose(drained -> client.release(state, true));
        } finally {
            resource.close(); // the action finds the state closed and does nothing
        }
    }

    /**
     * Releases the lease without waiting for the owner's answer (an offer this side had no room for): like the
     * Cleaner's release, it leaves nothing waiting for a peer that may never answer.
     */
    void discard() {
        if (state.closed.getAndSet(true)) return;
        try {
            client.release(state, false);
        } finally {
            resource.close();
        }
    }

    @Override
    public String toString() {
        return "RemoteSegment[lease " + state.leaseId + ", " + length + " bytes, " + access + "]";
    }
}
