package io.mooring.regcache;

import io.mooring.lifecycle.DestroyFailedException;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.MemoryRegion;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;

/**
 * One memory region a {@link RegistrationCache} registered: whole pages with some rights, shared by every
 * {@link Registration} it serves.
 *
 * <p>Its {@link #state} word is the only thing a hit writes: its pins, one per open registration, plus {@link #RETIRED}
 * once the cache hands it out no more. A hit takes a pin by CAS and fails once the region is retired, so no
 * registration is ever given a region on its way out. While pinned it pins its MR once (the first pin takes that,
 * the last releases it), so the graph defers the deregistration of a region in use whoever closes it.
 */
final class CachedRegion {
    private static final VarHandle STATE;
    private static final VarHandle LAST_USED;

    static {
        try {
            var lookup = MethodHandles.lookup();
            STATE = lookup.findVarHandle(CachedRegion.class, "state", int.class);
            LAST_USED = lookup.findVarHandle(CachedRegion.class, "lastUsed", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The state bit of a retired region; the other bits count its pins. */
    static final int RETIRED = Integer.MIN_VALUE;
    private static final int PINS = ~RETIRED;

    final long start;
    final long end;
    /** The {@code IBV_ACCESS_*} mask it was registered with. */
    final int access;
    final MemoryRegion region;
    // Captured at registration: they stay readable while a pin keeps the region alive after its handle closed.
    final int lkey;
    final int rkey;

    /** What the frequency policy knows it by: the same pages and rights registered again share their history. */
    final RegionKey key;
    /**
     * Set when the frequency policy chose it while it was in use and so dropped it: its last release hands it back.
     * Volatile, but read only by a release that leaves it unused.
     */
    volatile boolean outOfPolicy;

    private volatile int state;
    /** The cache's miss count when it last became unused: eviction takes the oldest first (LRU between misses). */
    @SuppressWarnings("unused") // through LAST_USED
    private long lastUsed;

    /** A new region with one pin, its creator's; the caller has pinned its MR for it. */
    CachedRegion(MemoryRegion region, int access) {
        this.start = region.address();
        this.end = start + region.length();
        this.access = access;
        this.region = region;
        this.lkey = region.lkey();
        this.rkey = region.rkey();
        this.key = new RegionKey(start, end, access);
        this.state = 1;
    }

    /** Pages and rights: equal for two registrations of the same range, whatever their MRs. */
    record RegionKey(long start, long end, int access) {}

    long length() {
        return end - start;
    }

    /** Whether it can serve {@code [from, to)} with at least {@code rights}. */
    boolean covers(long from, long to, int rights) {
        return start <= from && to <= end && (access & rights) == rights;
    }

    /**
     * Takes a pin, unless the region is retired or its MR was closed under the cache (its PD's tree closed).
     *
     * @return the pins it had before (0: it was unused), or -1 if it cannot be used
     */
    int tryPin() {
        for (;;) {
            int s = state;
            if (s < 0) return -1;
            if (s == 0) {
                // Pin the MR before the CAS publishes the pin, so that a pinned region always pins its MR.
                try {
                    region.resource().addPin();
                } catch (ResourceClosedException closed) {
                    return -1;
                }
                if (STATE.compareAndSet(this, 0, 1)) return 0;
                region.resource().removePin(); // lost a race with another hit or a retirement: look again
            } else if (STATE.compareAndSet(this, s, s + 1)) {
                return s;
            }
        }
    }

    /**
     * Releases a pin. The last pin of a retired region closes its handle and releases the MR's pin, which
     * deregisters it.
     *
     * @return the state after: 0 if it became unused, {@link #RETIRED} if it was retired and is now gone
     */
    int release(long tick) {
        int after = (int) STATE.getAndAdd(this, -1) - 1;
        if ((after & PINS) == 0) {
            if (after == 0) LAST_USED.setOpaque(this, tick);
            else region.close(); // retired while in use (a merge leaves the handle open until now)
            region.resource().removePin();
        }
        return after;
    }

    /**
     * Marks the region retired: no hit gets it any more.
     *
     * @return the pins it had (0: the caller deregisters it now), or -1 if it was already retired
     */
    int retire() {
        for (;;) {
            int s = state;
            if (s < 0) return -1;
            if (STATE.compareAndSet(this, s, s | RETIRED)) return s;
        }
    }

    /** Retires it only if it has no pins: what eviction does. */
    boolean retireIfUnused() {
        return STATE.compareAndSet(this, 0, RETIRED);
    }

    /** Unused and not retired: in the eviction order. */
    boolean isUnused() {
        return state == 0;
    }

    /** Whether registrations still pin it, retired or not. */
    boolean inUse() {
        return (state & PINS) != 0;
    }

    boolean isRetired() {
        return state < 0;
    }

    long lastUsed() {
        return (long) LAST_USED.getOpaque(this);
    }

    @Override
    public String toString() {
        return region + " [0x" + Long.toHexString(start) + ", +" + length() + ")";
    }

    /**
     * Closes the regions' handles: an unused region is deregistered now, one in use when its last registration
     * closes (its pin holds it). Outside the lock, since a deregistration is a system call.
     */
    static void deregister(List<CachedRegion> regions) {
        DestroyFailedException failure = null;
        for (CachedRegion r : regions) {
            try {
                r.region.close();
            } catch (DestroyFailedException e) {
                if (failure == null) failure = e;
                else failure.addSuppressed(e);
            }
        }
        if (failure != null) throw failure;
    }
}
