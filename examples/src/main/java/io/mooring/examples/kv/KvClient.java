package io.mooring.examples.kv;

import io.mooring.allocator.Block;
import io.mooring.lease.BorrowedLease;
import io.mooring.lease.LeaseCache;
import io.mooring.lease.LeaseEndedException;
import io.mooring.lease.LeaseLimits;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The client of {@link KvServer}: PUT sends the value in a call; GET reads it with one RDMA READ where the
 * server keeps it, through a lease the server offered on the first GET. The leases live in a {@link LeaseCache}:
 * at most what the server lets this host hold, the most used kept, each given back before it ends or when the server
 * replaces its value. One thread calls it.
 */
public final class KvClient implements AutoCloseable {
    private final RdmaSession session;
    private final KvRequests requests;
    private final LeaseCache<String> leases;

    /** A client of a server that grants leases within {@code serverLimits}. */
    KvClient(RdmaSession session, LeaseLimits serverLimits) {
        this.session = session;
        this.requests = new KvRequests(session);
        this.leases = LeaseCache.<String>builder(session).limits(serverLimits).build(this::offered);
    }

    /** Stores {@code value} under {@code key}. */
    public void put(String key, byte[] value) throws Exception {
        byte status = requests.put(key, value);
        leases.invalidate(key); // the server replaced the value, which revoked our lease of the old one
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
     * The cache's load of {@code key}: a GET, whose OK the server follows with an offer of the value. BUSY — the
     * server leases this host no more, which the cache's bound leaves to other clients on this host — fails it.
     */
    private CompletableFuture<RemoteSegment> offered(String key) {
        return requests.get(key).thenCompose(status -> switch (status) {
            case Kv.OK -> session.receiveOfferAsync().orTimeout(KvRequests.WAIT.toMillis(), TimeUnit.MILLISECONDS);
            case Kv.MISSING -> CompletableFuture.completedFuture(null);
            default -> CompletableFuture.failedFuture(new IllegalStateException("GET " + key + " answered "
                    + (status == Kv.BUSY ? "BUSY: the server leases this host no more values now" : status)));
        });
    }

    /** GETs served by a lease already held, of all GETs that found a value or asked for one. */
    public double leaseHitRatio() {
        return leases.stats().hitRate();
    }

    @Override
    public void close() {
        leases.close();
        requests.close();
    }

    /**
     * PUTs {@code keys} values, runs {@code warmup} operations untimed (half PUTs, so that both paths are compiled
     * before anything is timed, as a pingpong's warm-up is), then {@code ops} operations (90% GET, 10% PUT), every GET
     * checked against the last PUT, and reports what they took. The handshake may take {@code handshakeTimeout}.
     */
    public static List<String> run(String device, String server, int keys, int warmup, int ops,
                                   Duration handshakeTimeout) throws Exception {
        int colon = server.lastIndexOf(':');
        var address = new InetSocketAddress(server.substring(0, colon), Integer.parseInt(server.substring(colon + 1)));
        try (var kv = Kv.open(device);
             RdmaEndpoint endpoint = RdmaEndpoint.builder(kv.pd(), kv.arena()).handshakeTimeout(handshakeTimeout).build();
             RdmaSession session = endpoint.connectAsync(address).get();
             KvClient client = new KvClient(session, LeaseLimits.DEFAULT)) { // what KvServer grants
            var load = new Load(client, keys);
            for (int i = 0; i < keys; i++) load.put("key-" + i);
            for (int i = 0; i < warmup; i++) load.run(50);
            load.gets.clear();
            load.puts.clear();
            long start = System.nanoTime();
            for (int i = 0; i < ops; i++) load.run(10);
            double seconds = (System.nanoTime() - start) / 1e9;
            return List.of(String.format("client: %d ops in %.2f s, %.0f ops/s, every GET returned the last PUT",
                    ops, seconds, ops / seconds), "client: GET " + percentiles(load.gets),
                    "client: PUT " + percentiles(load.puts),
                    String.format("client: leases hit %.1f%% of GETs", 100 * client.leaseHitRatio()));
        }
    }

    /** Random operations on {@code keys} keys, each GET checked against the last PUT, and their latencies. */
    private static final class Load {
        final KvClient client;
        final int keys;
        final SplittableRandom random = new SplittableRandom(1);
        final Map<String, byte[]> expected = new HashMap<>();
        final List<Long> gets = new ArrayList<>();
        final List<Long> puts = new ArrayList<>();

        Load(KvClient client, int keys) {
            this.client = client;
            this.keys = keys;
        }

        /** One operation on a random key: a PUT with probability {@code putPercent}%, else a GET. */
        void run(int putPercent) throws Exception {
            String key = "key-" + random.nextInt(keys);
            long t = System.nanoTime();
            if (random.nextInt(100) < putPercent) {
                put(key);
                puts.add(System.nanoTime() - t);
            } else {
                if (!Arrays.equals(expected.get(key), client.get(key))) throw new IllegalStateException("GET " + key);
                gets.add(System.nanoTime() - t);
            }
        }

        void put(String key) throws Exception {
            byte[] value = new byte[64 + random.nextInt(1024)];
            random.nextBytes(value);
            client.put(key, value);
            expected.put(key, value);
        }
    }

    private static String percentiles(List<Long> nanos) {
        long[] sorted = nanos.stream().mapToLong(Long::longValue).sorted().toArray();
        return String.format("p50 %.1f µs, p99 %.1f µs (%d)", sorted[sorted.length / 2] / 1e3,
                sorted[(int) Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] / 1e3, sorted.length);
    }
}
