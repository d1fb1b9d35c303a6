package io.mooring.examples.kv;

import io.mooring.allocator.Block;
import io.mooring.lease.LeaseEndedException;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The KV client's lease policy before {@code LeaseCache} (21d488a), on today's protocol, for {@link KvWorkload}'s
 * comparison: every lease offered is kept in an unbounded map with a block to read it into, and all are dropped when
 * the server answers BUSY, then the client sleeps 1 ms. One thread.
 */
final class HashMapKvClient implements KvWorkload.Client {
    /** A value this client may read where the server keeps it, and a block of its size to read it into. */
    private record Cached(RemoteSegment value, Block local) {}

    private final RdmaSession session;
    private final KvRequests requests;
    private final Map<String, Cached> leased = new HashMap<>();

    HashMapKvClient(RdmaSession session) {
        this.session = session;
        this.requests = new KvRequests(session, 1);
    }

    @Override
    public void put(String key, byte[] value) throws Exception {
        byte status = requests.put(key, value);
        forget(key); // the server replaced the value, which revoked our lease of the old one
        if (status != Kv.OK) throw new IllegalStateException("PUT " + key + " refused");
    }

    @Override
    public byte[] get(String key) throws Exception {
        long deadline = System.nanoTime() + KvRequests.WAIT.toNanos();
        while (true) {
            Cached c = leased.get(key);
            if (c == null) {
                byte status = requests.get(key).get();
                if (status == Kv.MISSING) return null;
                if (status == Kv.BUSY) { // this host holds all the leases the server grants it: give ours back
                    if (System.nanoTime() - deadline > 0) throw new IllegalStateException("GET " + key + ": BUSY");
                    List.copyOf(leased.keySet()).forEach(this::forget);
                    Thread.sleep(1); // leases of replaced values count until they have ended
                    continue;
                }
                RemoteSegment value = session.receiveOffer(KvRequests.WAIT);
                c = new Cached(value, session.endpoint().arena().allocate(value.length()));
                leased.put(key, c);
            }
            if (c.value().isUsable()) {
                try {
                    c.value().read(c.local(), 0);
                    return c.local().segment().toArray(ValueLayout.JAVA_BYTE);
                } catch (LeaseEndedException revoked) { // replaced meanwhile, even right after the offer
                }
            }
            forget(key); // and ask again
        }
    }

    private void forget(String key) {
        Cached c = leased.remove(key);
        if (c != null) {
            c.value().closeAsync(); // RELEASE, without waiting for the server's acknowledgement
            c.local().close();
        }
    }

    @Override
    public void close() {
        List.copyOf(leased.keySet()).forEach(this::forget);
        requests.close();
    }
}
