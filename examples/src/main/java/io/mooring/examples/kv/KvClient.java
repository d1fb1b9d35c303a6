package io.mooring.examples.kv;

import io.mooring.allocator.Block;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The client of {@link KvServer}: PUT sends the value in a call; GET reads it with one RDMA READ where the
 * server keeps it, through a lease the server offered on the first GET and that the client keeps until the server
 * replaces the value (then it asks again). One thread; its blocks are its own.
 */
public final class KvClient implements AutoCloseable {
    private static final Duration WAIT = Duration.ofSeconds(10);

    /** A value this client may read where the server keeps it, and a block of its size to read it into. */
    private record Cached(RemoteSegment value, Block local) {}

    private final RdmaSession session;
    private final Block request;
    private final Map<String, Cached> leased = new HashMap<>();

    KvClient(RdmaSession session) {
        this.session = session;
        this.request = session.endpoint().arena().allocate(session.peerMaxMessageSize());
    }

    /** Stores {@code value} under {@code key}. */
    public void put(String key, byte[] value) throws Exception {
        int keyLength = encode(Kv.PUT, key);
        if (value.length == 0 || value.length > request.size() - 2 - keyLength) {
            throw new IllegalArgumentException("a value of key " + key + " has 1 to " + (request.size() - 2 - keyLength)
                    + " bytes (the server's message size), not " + value.length);
        }
        MemorySegment.copy(value, 0, request.segment(), ValueLayout.JAVA_BYTE, 2 + keyLength, value.length);
        byte status = call(2 + keyLength + value.length);
        forget(key); // the server replaced the value, which revoked our lease of the old one: released off the PUT's path
        if (status != Kv.OK) throw new IllegalStateException("PUT " + key + " refused");
    }

    /** The value of {@code key}, or null if there is none. */
    public byte[] get(String key) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (true) {
            Cached c = leased.get(key);
            if (c == null) {
                byte status = call(2 + encode(Kv.GET, key));
                if (status == Kv.MISSING) return null;
                if (status == Kv.BUSY) { // this host holds all the leases the server grants it: give ours back
                    if (System.nanoTime() - deadline > 0) {
                        throw new IllegalStateException("GET " + key + ": the server leased this host nothing for " + WAIT);
                    }
                    forgetAll();
                    Thread.sleep(1); // leases of replaced values count until they have ended
                    continue;
                }
                RemoteSegment value = session.receiveOffer(WAIT);
                c = new Cached(value, session.endpoint().arena().allocate(value.length()));
                leased.put(key, c);
            }
            if (c.value().isUsable()) {
                try {
                    c.value().read(c.local(), 0); // the common case: one READ
                    return c.local().segment().toArray(ValueLayout.JAVA_BYTE);
                } catch (IllegalStateException revoked) { // replaced meanwhile, even right after the offer
                }
            }
            forget(key); // and ask again
        }
    }

    private int encode(byte op, String key) {
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        if (k.length > 255) throw new IllegalArgumentException("a key has at most 255 bytes, " + key + " has " + k.length);
        MemorySegment m = request.segment();
        m.set(ValueLayout.JAVA_BYTE, 0, op);
        m.set(ValueLayout.JAVA_BYTE, 1, (byte) k.length);
        MemorySegment.copy(k, 0, m, ValueLayout.JAVA_BYTE, 2, k.length);
        return k.length;
    }

    /** Calls with the request's first {@code length} bytes and returns the reply's status. */
    private byte call(int length) throws Exception {
        var reply = session.callAsync(request, length);
        try (InboundMessage status = reply.get(WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
            return status.data().get(ValueLayout.JAVA_BYTE, 0);
        } catch (TimeoutException e) {
            reply.cancel(false); // a reply that comes later is freed
            throw e;
        }
    }

    private void forget(String key) {
        Cached c = leased.remove(key);
        if (c != null) {
            c.value().closeAsync(); // RELEASE, without waiting for the server's acknowledgement
            c.local().close();
        }
    }

    private void forgetAll() {
        List.copyOf(leased.keySet()).forEach(this::forget);
    }

    @Override
    public void close() {
        forgetAll();
        request.close();
    }

    /**
     * PUTs {@code keys} values, runs {@code warmup} operations untimed (half PUTs, so that both paths are compiled
     * before anything is timed, as a pingpong's warm-up is), then {@code ops} operations (90% GET, 10% PUT), every GET
     * checked against the last PUT, and reports what they took.
     */
    public static List<String> run(String device, String server, int keys, int warmup, int ops) throws Exception {
        int colon = server.lastIndexOf(':');
        var address = new InetSocketAddress(server.substring(0, colon), Integer.parseInt(server.substring(colon + 1)));
        try (var kv = Kv.open(device);
             RdmaEndpoint endpoint = RdmaEndpoint.builder(kv.pd(), kv.arena()).build();
             RdmaSession session = endpoint.connect(address).get();
             KvClient client = new KvClient(session)) {
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
                    "client: PUT " + percentiles(load.puts));
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
