package io.mooring.examples.kv;

import io.mooring.allocator.Block;
import io.mooring.lease.BorrowedLease;
import io.mooring.lease.EndReason;
import io.mooring.lease.LeaseCache;
import io.mooring.lease.LeaseEndedException;
import io.mooring.lease.LeaseLimits;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;

/**
 * The client of {@link KvServer}: PUT sends the value in a call; GET reads it with one RDMA READ where the
 * server keeps it, through a lease the server offered on the first GET. The leases live in a {@link LeaseCache}:
 * at most what the server lets this host hold, the most used kept, each given back before it ends; the server revokes
 * a lease of a value a PUT replaces before it answers the PUT. Thread-safe: many tasks may call it at once, each call
 * in flight on the session.
 */
public final class KvClient implements AutoCloseable {
    private final RdmaSession session;
    private final KvRequests requests;
    private final TaggedOffers offers;
    private final LeaseCache<String> leases;
    private final LongAdder revoked = new LongAdder();

    /** A client of a server that grants leases within {@code serverLimits}, called by one task at a time. */
    KvClient(RdmaSession session, LeaseLimits serverLimits) {
        this(session, serverLimits, 1);
    }

    /** A client called by about {@code tasks} tasks at once (their requests' buffers are pooled). */
    KvClient(RdmaSession session, LeaseLimits serverLimits, int tasks) {
        this.session = session;
        this.requests = new KvRequests(session, tasks);
        this.offers = new TaggedOffers(session);
        this.leases = LeaseCache.<String>builder(session).limits(serverLimits).build(this::offered);
    }

    /**
     * Stores {@code value} under {@code key}; returns once no GET can read the value it replaced — its leases, this
     * client's too, were revoked.
     */
    public void put(String key, byte[] value) throws Exception {
        byte status = requests.put(key, value);
        if (status != Kv.OK) throw new IllegalStateException("PUT " + key + " refused");
    }

    /**
     * The value of {@code key}, or null if there is none.
     *
     * @throws IllegalStateException if the server answers BUSY: this host holds all the leases it grants (through
     *                               other clients: this one's cache holds no more than that)
     */
    public byte[] get(String key) {
        KvRequests.keyBytes(key); // refused here, not in the cache's load
        while (true) {
            try (BorrowedLease value = leases.acquire(key)) { // not released under our READ, even if evicted
                if (value == null) return null;
                try (Block local = session.endpoint().arena().allocate(value.segment().length())) {
                    value.segment().read(local, 0); // the common case: one READ
                    return local.segment().toArray(ValueLayout.JAVA_BYTE);
                }
            } catch (LeaseEndedException revoked) { // replaced meanwhile, even right after the offer: ask again
                leases.invalidate(key);
            }
        }
    }

    /**
     * The cache's load of {@code key}: a GET, whose OK the server precedes with an offer of the value, tagged as the
     * GET asked. BUSY — the server leases this host no more, which the cache's bound leaves to other clients on this
     * host — fails it.
     */
    private CompletableFuture<RemoteSegment> offered(String key) {
        long tag = offers.expect();
        CompletableFuture<Byte> status;
        try {
            status = requests.get(key, tag);
        } catch (RuntimeException e) {
            offers.drop(tag);
            throw e;
        }
        return status.thenCompose(s -> switch (s) {
            case Kv.OK -> offers.of(tag).thenApply(this::counted);
            case Kv.MISSING -> CompletableFuture.<RemoteSegment>completedFuture(null);
            default -> CompletableFuture.<RemoteSegment>failedFuture(new IllegalStateException("GET " + key
                    + " answered " + (s == Kv.BUSY ? "BUSY: the server leases this host no more values now" : s)));
        }).whenComplete((segment, e) -> {
            if (e == null) offers.forget(tag);
            else offers.drop(tag);
        });
    }

    /** Counts the lease if the server revokes it: a PUT replaced the value while this client held it. */
    private RemoteSegment counted(RemoteSegment segment) {
        segment.revoked().thenAccept(reason -> {
            if (reason == EndReason.OWNER_CLOSED) revoked.increment();
        });
        return segment;
    }

    /** GETs served by a lease already held, of all GETs that found a value or asked for one. */
    public double leaseHitRatio() {
        return leases.stats().hitRate();
    }

    /** Leases of this client's the server revoked because a PUT replaced their value. */
    public long revokedLeases() {
        return revoked.sum();
    }

    /** Why the session ended, or null while it is up. */
    String lostReason() {
        return session.lostReason();
    }

    @Override
    public void close() {
        leases.close();
        requests.close();
    }

    /**
     * PUTs {@code keys} values, runs {@code warmup} operations untimed (half PUTs, so that both paths are compiled
     * before anything is timed, as a pingpong's warm-up is), then {@code ops} operations (90% GET, 10% PUT), on
     * {@code tasks} virtual threads, every GET checked ({@link KvLoad}), and reports what they took. The handshake may
     * take {@code handshakeTimeout}.
     */
    public static List<String> run(String device, String server, int keys, int warmup, int ops, int tasks,
                                   Duration handshakeTimeout) throws Exception {
        int colon = server.lastIndexOf(':');
        var address = new InetSocketAddress(server.substring(0, colon), Integer.parseInt(server.substring(colon + 1)));
        try (var kv = Kv.open(device);
             RdmaEndpoint endpoint = RdmaEndpoint.builder(kv.pd(), kv.arena()).handshakeTimeout(handshakeTimeout).build();
             RdmaSession session = endpoint.connectAsync(address).get();
             KvClient client = new KvClient(session, LeaseLimits.DEFAULT, tasks)) { // what KvServer grants
            return new KvLoad(client, keys, tasks).run(warmup, ops);
        }
    }
}
