package io.mooring.allocator;

import io.mooring.verbs.MemoryRegion;
import java.lang.foreign.MemorySegment;

/**
 * Memory the caller owns, made usable for RDMA by a {@link RegistrationCache}: the caller's segment and the
 * registered region that covers it. Work requests name {@link #region()} at {@link #offset()}:
 * <pre>{@code
 * try (Registration reg = cache.acquire(buffer)) {
 *     qp.post(WorkRequest.send(reg.region(), reg.offset(), (int) buffer.byteSize()));
 * }
 * }</pre>
 *
 * <p>While it is open its region stays registered, whatever happens to the cache: after the cache closes or the
 * memory is invalidated, the region's handle is closed (no new work request can name it) but it is deregistered
 * only when the last registration on it closes. Closing gives the region back to the cache; a second close
 * throws and changes nothing.
 */
public final class Registration implements AutoCloseable {
    private final RegistrationCache cache;
    final CachedRegion cached;
    private final MemorySegment segment;
    volatile boolean closed; // written under the cache's lock

    Registration(RegistrationCache cache, CachedRegion cached, MemorySegment segment) {
        this.cache = cache;
        this.cached = cached;
        this.segment = segment;
    }

    /** The caller's memory, as given to {@link RegistrationCache#acquire}. */
    public MemorySegment segment() {
        checkOpen();
        return segment;
    }

    /** The registered region: the page-aligned range around the segment, or a larger cached one containing it. */
    public MemoryRegion region() {
        checkOpen();
        return cached.region;
    }

    /** Where the segment starts inside {@link #region()}: the offset work requests name. */
    public long offset() {
        checkOpen();
        return segment.address() - cached.start;
    }

    /** The key local work requests name the region by. */
    public int lkey() {
        checkOpen();
        return cached.lkey;
    }

    /** The key peers name the region by; useful only for the remote rights it was acquired with. */
    public int rkey() {
        checkOpen();
        return cached.rkey;
    }

    public boolean isOpen() {
        return !closed;
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException(this + " is closed");
    }

    /**
     * Gives the region back to the cache, which keeps it for reuse (within its bounds) unless it was invalidated.
     *
     * @throws IllegalStateException if it was already closed (nothing else happens)
     */
    @Override
    public void close() {
        cache.release(this);
    }

    @Override
    public String toString() {
        return "Registration[0x" + Long.toHexString(segment.address()) + ", " + segment.byteSize() + " bytes in "
                + cached + (closed ? ", closed" : "") + "]";
    }
}
