package io.mooring.regcache;

import io.mooring.lifecycle.ResourceClosedException;
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
 * <p>While it is open its region stays registered, whatever happens to the cache: after the memory is invalidated
 * or the cache closes, the region's handle is closed (no new work request can name it) but it is deregistered only
 * when the last registration on it closes. Its getters throw {@link ResourceClosedException} once it is closed.
 * Closing gives the region back to the cache; a second close throws that too and changes nothing. One that becomes
 * unreachable unclosed is given back by the cache's leak tracker and counted and logged as a leak
 * ({@link RegistrationCacheStats#leaks()}): its pages stay pinned until then. Any thread may close it.
 */
public final class Registration implements AutoCloseable {
    private final RegionPin pin;
    private final MemorySegment segment;

    Registration(RegistrationCache cache, CachedRegion cached, MemorySegment segment) {
        this.pin = new RegionPin(this, cache, cached, segment.address(), segment.byteSize(), LeakTracker.stripe());
        this.segment = segment;
        LeakTracker.track(pin);
    }

    /** The caller's memory, as given to {@link RegistrationCache#acquire}. */
    public MemorySegment segment() {
        checkOpen();
        return segment;
    }

    /** The registered region: the whole pages around the segment, or a larger cached region containing them. */
    public MemoryRegion region() {
        checkOpen();
        return pin.cached.region;
    }

    /** Where the segment starts inside {@link #region()}: the offset work requests name. */
    public long offset() {
        checkOpen();
        return segment.address() - pin.cached.start;
    }

    /** The key local work requests name the region by. */
    public int lkey() {
        checkOpen();
        return pin.cached.lkey;
    }

    /** The key peers name the region by; useful only for the remote rights it was acquired with. */
    public int rkey() {
        checkOpen();
        return pin.cached.rkey;
    }

    public boolean isOpen() {
        return !pin.isClosed();
    }

    private void checkOpen() {
        if (pin.isClosed()) throw new ResourceClosedException(this + " is closed");
    }

    /**
     * Gives the region back to the cache, which keeps it for reuse (within its bounds) unless it was invalidated.
     *
     * @throws ResourceClosedException if it was already closed (nothing else happens)
     */
    @Override
    public void close() {
        if (!pin.markClosed()) throw new ResourceClosedException(this + " is already closed");
        LeakTracker.untrack(pin);
        pin.cache.release(pin.cached);
    }

    @Override
    public String toString() {
        return "Registration[" + pin + " in " + pin.cached + (pin.isClosed() ? ", closed" : "") + "]";
    }
}
