package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.verbs.Access;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.MemoryWindow;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The owner's side of one exposure of one block: the peer may reach {@code [address, address + length)}
 * through {@link #rkey()} until the lease ends — then access is revoked (window invalidated, or dedicated
 * registration deregistered) and only after that is the block given back to its arena. The lease owns its
 * block from the grant on. {@link #close()} ends it now.
 */
public final class Lease implements AutoCloseable {
    private final LeaseManager manager;
    private final long id;
    private final Block block;
    private final int rkey;
    private final Set<Access> access;
    private final long grantedNanos;
    final MemoryWindow window;      // WINDOW isolation
    final MemoryRegion dedicated;   // DEDICATED_REGISTRATION isolation
    private final AtomicBoolean ending = new AtomicBoolean();
    private final CompletableFuture<EndReason> ended = new CompletableFuture<>();
    private volatile long deadlineNanos;
    volatile ScheduledFuture<?> expiry;

    Lease(LeaseManager manager, long id, Block block, int rkey, Set<Access> access, Duration duration,
          MemoryWindow window, MemoryRegion dedicated) {
        this.manager = manager;
        this.id = id;
        this.block = block;
        this.rkey = rkey;
        this.access = Set.copyOf(access);
        this.window = window;
        this.dedicated = dedicated;
        this.grantedNanos = System.nanoTime();
        this.deadlineNanos = grantedNanos + duration.toNanos();
    }

    public long id() {
        return id;
    }

    /** The exposed block, for local use while the lease is active. */
    public Block block() {
        return block;
    }

    public long address() {
        return block.address();
    }

    public long length() {
        return block.size();
    }

    /** The key the peer names this block with: the window's, the dedicated region's, or the chunk region's. */
    public int rkey() {
        return rkey;
    }

    public Set<Access> access() {
        return access;
    }

    /** Time left before the lease expires (negative once past), on this host's monotonic clock. */
    public Duration remaining() {
        return Duration.ofNanos(deadlineNanos - System.nanoTime());
    }

    public boolean isActive() {
        return !ending.get();
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

    /** Claims the end of the lease; false if it is already ending. */
    boolean beginEnd() {
        return ending.compareAndSet(false, true);
    }

    void finish(EndReason reason) {
        ended.complete(reason);
    }

    /** Ends the lease now and waits until access is revoked. Idempotent. */
    @Override
    public void close() {
        manager.end(this, EndReason.RELEASED).join();
    }

    @Override
    public String toString() {
        return "Lease[" + id + ", " + block + ", rkey 0x" + Integer.toHexString(rkey) + ", " + access
                + (isActive() ? ", " + remaining().toMillis() + " ms left" : ", ended") + "]";
    }
}
