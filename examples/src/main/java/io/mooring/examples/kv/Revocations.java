package io.mooring.examples.kv;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * What the leases a PUT revoked cost the server: for each, the time from the PUT's close of the value it replaced to the
 * lease's end — the REVOKE, the holder's READs in flight, its RELEASE, the key's invalidation — and the sessions lost.
 * Thread-safe.
 */
final class Revocations {
    /** Times kept, at most: the first million (8 bytes each, boxed: tens of MiB). */
    private static final int KEPT = 1 << 20;

    private final List<Long> nanos = new ArrayList<>(); // guarded by itself
    private final AtomicInteger lost = new AtomicInteger();

    void revoked(long tookNanos) {
        synchronized (nanos) {
            if (nanos.size() < KEPT) nanos.add(tookNanos);
        }
    }

    void sessionLost() {
        lost.incrementAndGet();
    }

    @Override
    public String toString() {
        synchronized (nanos) {
            return "server: leases revoked by PUTs " + KvLoad.percentiles(nanos) + "; " + lost.get() + " session(s) lost";
        }
    }
}
