package io.mooring.regcache;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.PhantomReference;

/**
 * The pin one {@link Registration} holds on its cached region, kept apart from the registration so that the
 * {@link LeakTracker} can release it after the registration became unreachable unclosed. Released exactly once:
 * whoever wins {@link #markClosed()} (the registration's close or the tracker) releases it.
 */
final class RegionPin extends PhantomReference<Registration> {
    private static final VarHandle CLOSED;

    static {
        try {
            CLOSED = MethodHandles.lookup().findVarHandle(RegionPin.class, "closed", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final RegistrationCache cache;
    final CachedRegion cached;
    // What the registration covered, for messages; kept as numbers so that a hit formats nothing.
    final long address;
    final long size;
    private volatile boolean closed;
    // The tracker's stripe list, guarded by the stripe's monitor.
    final LeakTracker.Stripe stripe;
    RegionPin prev;
    RegionPin next;

    RegionPin(Registration registration, RegistrationCache cache, CachedRegion cached, long address, long size,
              LeakTracker.Stripe stripe) {
        super(registration, LeakTracker.QUEUE);
        this.cache = cache;
        this.cached = cached;
        this.address = address;
        this.size = size;
        this.stripe = stripe;
    }

    /** @return true for the one caller that closes it */
    boolean markClosed() {
        return CLOSED.compareAndSet(this, false, true);
    }

    boolean isClosed() {
        return closed;
    }

    @Override
    public String toString() {
        return "0x" + Long.toHexString(address) + ", " + size + " bytes";
    }
}
