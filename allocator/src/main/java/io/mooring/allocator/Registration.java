package io.mooring.allocator;

import io.mooring.verbs.MemoryRegion;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Cleaner;

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
 * throws and changes nothing. One that becomes unreachable unclosed is given back by a {@link Cleaner} and
 * counted and logged as a leak ({@link RegistrationCacheStats#leaks()}): its pages stay pinned until then.
 */
public final class Registration implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create(Thread.ofPlatform().daemon().name("mooring-regcache-cleaner")
            .factory());

    final Hold hold;
    private final MemorySegment segment;
    private final Cleaner.Cleanable cleanable;

    Registration(RegistrationCache cache, CachedRegion cached, MemorySegment segment) {
        this.hold = new Hold(cache, cached, "0x" + Long.toHexString(segment.address()) + ", " + segment.byteSize()
                + " bytes");
        this.segment = segment;
        this.cleanable = CLEANER.register(this, hold);
    }

    /**
     * What a registration holds, apart from the handle: enough for the Cleaner to give it back without keeping the
     * handle reachable.
     */
    static final class Hold implements Runnable {
        final RegistrationCache cache;
        final CachedRegion cached;
        final String what;
        volatile boolean closed; // written under the cache's lock

        Hold(RegistrationCache cache, CachedRegion cached, String what) {
            this.cache = cache;
            this.cached = cached;
            this.what = what;
        }

        /** The Cleaner's action; after {@code close()} it finds the hold closed and does nothing. */
        @Override
        public void run() {
            if (!closed) cache.releaseLeaked(this);
        }
    }

    /** The caller's memory, as given to {@link RegistrationCache#acquire}. */
    public MemorySegment segment() {
        checkOpen();
        return segment;
    }

    /** The registered region: the page-aligned range around the segment, or a larger cached one containing it. */
    public MemoryRegion region() {
        checkOpen();
        return hold.cached.region;
    }

    /** Where the segment starts inside {@link #region()}: the offset work requests name. */
    public long offset() {
        checkOpen();
        return segment.address() - hold.cached.start;
    }

    /** The key local work requests name the region by. */
    public int lkey() {
        checkOpen();
        return hold.cached.lkey;
    }

    /** The key peers name the region by; useful only for the remote rights it was acquired with. */
    public int rkey() {
        checkOpen();
        return hold.cached.rkey;
    }

    public boolean isOpen() {
        return !hold.closed;
    }

    private void checkOpen() {
        if (hold.closed) throw new IllegalStateException(this + " is closed");
    }

    /**
     * Gives the region back to the cache, which keeps it for reuse (within its bounds) unless it was invalidated.
     *
     * @throws IllegalStateException if it was already closed (nothing else happens)
     */
    @Override
    public void close() {
        hold.cache.release(hold, false);
        cleanable.clean(); // unregisters; the action finds the hold closed
    }

    @Override
    public String toString() {
        return "Registration[" + hold.what + " in " + hold.cached + (hold.closed ? ", closed" : "") + "]";
    }
}
