package io.mooring.lease;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A segment borrowed from a {@link LeaseCache} ({@link LeaseCache#acquire}): the cache does not release its lease
 * while it is borrowed, even if it evicts it meanwhile. Close it when the operations on the segment are done. A lease
 * the owner revoked or that expired still ends: operations then throw, as on any {@link RemoteSegment}.
 */
public final class BorrowedLease implements AutoCloseable {
    private final LeaseCache<?> cache;
    private final CachedLease lease;
    private final AtomicBoolean closed = new AtomicBoolean();

    BorrowedLease(LeaseCache<?> cache, CachedLease lease) {
        this.cache = cache;
        this.lease = lease;
    }

    /** The peer's memory this lease reaches. */
    public RemoteSegment segment() {
        return lease.segment;
    }

    /** Gives it back to the cache, which releases the lease now if it let it go meanwhile. Idempotent. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true) && lease.giveBack()) cache.release(lease.segment);
    }

    @Override
    public String toString() {
        return "BorrowedLease[" + lease.segment + "]";
    }
}
