package io.mooring.examples.kv;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The load {@code mooring kv} puts on a {@link KvClient}: tasks on virtual threads, each doing GETs of any key and PUTs
 * of its own keys (key {@code k} is task {@code k % tasks}'s), so that each key's values have an order, their versions,
 * and every GET is checked: it returned a whole value — the bytes its version makes, never torn — of a version no
 * older than the key's last PUT completed before the GET began (never stale) and no newer than its last PUT begun
 * before the GET ended. With one task, that is the last PUT.
 */
final class KvLoad {
    private static final VarHandle VERSION = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    private final KvClient client;
    private final int keys;
    private final int tasks;
    /** Per key, the version of its last PUT completed, and of its last PUT begun. */
    private final AtomicLongArray completed;
    private final AtomicLongArray begun;

    KvLoad(KvClient client, int keys, int tasks) {
        this.client = client;
        this.keys = keys;
        this.tasks = tasks;
        this.completed = new AtomicLongArray(keys);
        this.begun = new AtomicLongArray(keys);
    }

    /** Version {@code version} of key {@code key}'s value: 64 to 1,087 bytes, the version in the first 8. */
    static byte[] value(int key, long version) {
        var random = new SplittableRandom(key * 0x9E3779B97F4A7C15L + version);
        byte[] value = new byte[64 + random.nextInt(1024)];
        random.nextBytes(value);
        VERSION.set(value, 0, version);
        return value;
    }

    /**
     * PUTs every key, runs {@code warmup} operations untimed (half PUTs), then {@code ops} (10% PUTs); the report's
     * lines. Throws at the first GET that fails its check.
     */
    List<String> run(int warmup, int ops) throws Exception {
        for (int k = 0; k < keys; k++) put(k);
        operations(warmup, 50);
        long revokedBefore = client.revokedLeases();
        long start = System.nanoTime();
        Latencies timed = operations(ops, 10);
        double seconds = (System.nanoTime() - start) / 1e9;
        if (client.lostReason() != null) throw new IllegalStateException("session lost: " + client.lostReason());
        return List.of(String.format("client: %d ops in %.2f s, %.0f ops/s, every GET returned the last PUT completed"
                        + " before it, or a later one", ops, seconds, ops / seconds),
                "client: GET " + percentiles(timed.gets), "client: PUT " + percentiles(timed.puts),
                String.format("client: leases hit %.1f%% of GETs", 100 * client.leaseHitRatio()),
                String.format("client: %d tasks, %d leases revoked by PUTs while held, 0 stale or torn GETs, session"
                        + " kept", tasks, client.revokedLeases() - revokedBefore));
    }

    private record Latencies(List<Long> gets, List<Long> puts) {
        Latencies() {
            this(new ArrayList<>(), new ArrayList<>());
        }
    }

    /** {@code ops} operations spread over the tasks, each a PUT with probability {@code putPercent}%. */
    private Latencies operations(int ops, int putPercent) throws Exception {
        List<Future<Latencies>> running = new ArrayList<>();
        try (var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int t = 0; t < tasks; t++) {
                int task = t;
                int share = ops / tasks + (t < ops % tasks ? 1 : 0);
                running.add(threads.submit(() -> task(task, share, putPercent)));
            }
        }
        var all = new Latencies();
        for (var r : running) {
            try {
                Latencies l = r.get();
                all.gets.addAll(l.gets);
                all.puts.addAll(l.puts);
            } catch (ExecutionException e) {
                throw e.getCause() instanceof Exception cause ? cause : e;
            }
        }
        return all;
    }

    private Latencies task(int task, int ops, int putPercent) throws Exception {
        var random = new SplittableRandom(task + 1);
        int own = keys / tasks + (task < keys % tasks ? 1 : 0); // keys task, task + tasks, ...
        var latencies = new Latencies();
        for (int i = 0; i < ops; i++) {
            long start = System.nanoTime();
            if (own > 0 && random.nextInt(100) < putPercent) {
                put(task + tasks * random.nextInt(own));
                latencies.puts.add(System.nanoTime() - start);
            } else {
                get(random.nextInt(keys));
                latencies.gets.add(System.nanoTime() - start);
            }
        }
        return latencies;
    }

    private void put(int key) throws Exception {
        long version = begun.incrementAndGet(key); // one writer per key: versions in the order stored
        client.put("key-" + key, value(key, version));
        completed.set(key, version);
    }

    private void get(int key) {
        long oldest = completed.get(key);
        byte[] got = client.get("key-" + key);
        long newest = begun.get(key);
        long version = got == null || got.length < Long.BYTES ? -1 : (long) VERSION.get(got, 0);
        if (!Arrays.equals(got, value(key, version))) {
            throw new IllegalStateException("GET key-" + key + " returned " + (got == null ? "nothing"
                    : got.length + " bytes that are no whole value (torn, or another key's)"));
        }
        if (version < oldest || version > newest) {
            throw new IllegalStateException("GET key-" + key + " returned version " + version + ", the last PUT"
                    + " completed before it began was " + oldest + " and the last begun before it ended " + newest);
        }
    }

    /** "p50 … µs, p99 … µs (count)", or "none". */
    static String percentiles(List<Long> nanos) {
        long[] sorted = nanos.stream().mapToLong(Long::longValue).sorted().toArray();
        if (sorted.length == 0) return "none";
        return String.format("p50 %.1f µs, p99 %.1f µs (%d)", sorted[sorted.length / 2] / 1e3,
                sorted[(int) Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] / 1e3, sorted.length);
    }
}
