package io.mooring.examples.kv;

import io.mooring.lease.LeaseLimits;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * The KV workload with more keys than the server leases one host, for the lease cache's figures (docs/benchmarks.md):
 * an in-process server (soft0, default limits: 1,024 leases per host) and, in turn on it, the client before the lease
 * cache ({@link HashMapKvClient}: an unbounded map, dropped whole on BUSY) and {@link KvClient} with its
 * {@code LeaseCache}. Each PUTs every key, warms up, then runs 90% GETs and 10% PUTs of uniformly random keys, every
 * GET checked against the last PUT. Both are measured the same way, from the server's counters: a GET during which
 * the server offered a lease is a miss, else a hit; a BUSY reply is an offer the server refused for the host's limit.
 * <pre>KvWorkload [KEYS [OPS [ROUNDS [LEASES]]]]</pre> (LEASES: the server's per-host limit, default 1,024)
 */
final class KvWorkload {
    /** One client under test: the calls the workload makes. */
    interface Client extends AutoCloseable {
        void put(String key, byte[] value) throws Exception;

        byte[] get(String key) throws Exception;

        @Override
        void close();
    }

    /**
     * A run's GETs: how many, the server's offers and refusals, latencies (µs: percentiles of all, hits, misses, and
     * the mean), and the process's CPU time per operation (µs, server included: the work, however it is spread).
     */
    record Result(String client, int gets, long offers, long busy, double p50, double p99, double hitP50,
                  double missP50, double mean, double cpuPerOp) {
        double hitRatio() {
            return 1 - (double) offers / gets;
        }
    }

    public static void main(String[] args) throws Throwable {
        int keys = args.length > 0 ? Integer.parseInt(args[0]) : 4096;
        int ops = args.length > 1 ? Integer.parseInt(args[1]) : 20_000;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 2;
        var limits = args.length > 3
                ? LeaseLimits.DEFAULT.toBuilder().maxLeases(Integer.parseInt(args[3])).build() : LeaseLimits.DEFAULT;
        try (var server = Kv.open("soft:soft0"); var client = Kv.open("soft:soft0");
             RdmaEndpoint serverEndpoint = RdmaEndpoint.builder(server.pd(), server.arena()).limits(limits).build();
             RdmaEndpoint clientEndpoint = RdmaEndpoint.builder(client.pd(), client.arena()).build()) {
            RdmaListener listener = serverEndpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            var kv = new KvServer();
            Thread serving = Thread.ofVirtual().start(() -> {
                try {
                    kv.serve(listener, 0);
                } catch (Exception e) {
                    // the listener closed: the run is over
                }
            });
            System.out.printf(Locale.ROOT, "%,d keys, server limit %,d leases per host, %,d ops (90%% GET) per run%n",
                    keys, limits.maxLeases(), ops);
            System.out.println("| client | GETs | leases offered | GET hit ratio | BUSY replies | GET p50 µs"
                    + " | GET p99 µs | hit p50 µs | miss p50 µs | GET mean µs | CPU µs/op |");
            System.out.println("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
            for (int round = 0; round < rounds; round++) {
                report("before (HashMap)", serverEndpoint, clientEndpoint, listener, keys, ops, HashMapKvClient::new);
                report("LeaseCache", serverEndpoint, clientEndpoint, listener, keys, ops, s -> {
                    var c = new KvClient(s, limits);
                    return new Client() {
                        public void put(String key, byte[] value) throws Exception {
                            c.put(key, value);
                        }

                        public byte[] get(String key) throws Exception {
                            return c.get(key);
                        }

                        public void close() {
                            c.close();
                        }
                    };
                });
            }
            listener.close();
            serving.join(10_000);
            kv.clear();
        }
    }

    interface Factory {
        Client open(RdmaSession session) throws Throwable;
    }

    private static Result run(String name, RdmaEndpoint serverEndpoint, RdmaEndpoint clientEndpoint,
                              RdmaListener listener, int keys, int ops, Factory factory) throws Throwable {
        var random = new SplittableRandom(7);
        Map<String, byte[]> expected = new HashMap<>();
        List<Long> hits = new ArrayList<>();
        List<Long> misses = new ArrayList<>();
        Grants start = null;
        long cpu = 0;
        try (RdmaSession session = clientEndpoint.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
             Client client = factory.open(session)) {
            for (int i = 0; i < keys; i++) put(client, "key-" + i, random, expected);
            for (int i = -ops / 2; i < ops; i++) { // a warm-up of half as many operations, then the measured ones
                if (i == 0) {
                    start = serverStats(serverEndpoint);
                    cpu = cpuNanos();
                }
                String key = "key-" + random.nextInt(keys);
                if (random.nextInt(10) == 0) {
                    put(client, key, random, expected);
                } else {
                    long offers = i >= 0 ? serverStats(serverEndpoint).granted() : 0;
                    long t = System.nanoTime();
                    byte[] value = client.get(key);
                    long took = System.nanoTime() - t;
                    if (i >= 0) (serverStats(serverEndpoint).granted() == offers ? hits : misses).add(took);
                    if (!Arrays.equals(expected.get(key), value)) throw new IllegalStateException("GET " + key);
                }
            }
            Grants end = serverStats(serverEndpoint);
            cpu = cpuNanos() - cpu;
            var gets = new ArrayList<>(hits);
            gets.addAll(misses);
            long[] all = sorted(gets);
            return new Result(name, all.length, end.granted() - start.granted(), end.refused() - start.refused(),
                    percentile(all, 0.5), percentile(all, 0.99), percentile(sorted(hits), 0.5),
                    percentile(sorted(misses), 0.5), Arrays.stream(all).average().orElse(Double.NaN) / 1e3,
                    cpu / 1e3 / ops);
        } finally {
            Thread.sleep(LeaseLimits.DEFAULT.grace().toMillis() * 2); // the server ends the last revoked leases
        }
    }

    /** The process's CPU time so far (the OS's clock ticks: 10 ms steps, over a run of seconds). */
    private static long cpuNanos() {
        return ProcessHandle.current().info().totalCpuDuration().orElseThrow().toNanos();
    }

    private static long[] sorted(List<Long> nanos) {
        return nanos.stream().mapToLong(Long::longValue).sorted().toArray();
    }

    /** The {@code q} quantile of {@code sorted} nanoseconds, in µs (NaN if there are none). */
    private static double percentile(long[] sorted, double q) {
        return sorted.length == 0 ? Double.NaN : sorted[(int) (sorted.length * q)] / 1e3;
    }

    private static void put(Client client, String key, SplittableRandom random, Map<String, byte[]> expected)
            throws Exception {
        byte[] value = new byte[64 + random.nextInt(1024)];
        random.nextBytes(value);
        client.put(key, value);
        expected.put(key, value);
    }

    /** Offers granted and refused by the server's sessions. */
    private record Grants(long granted, long refused) {}

    /** The server's sessions' {@link Grants} (the last client's has ended before a run starts). */
    private static Grants serverStats(RdmaEndpoint serverEndpoint) {
        long granted = 0;
        long refused = 0;
        for (RdmaSession s : serverEndpoint.sessions()) {
            granted += s.leases().stats().granted();
            refused += s.leases().stats().refused();
        }
        return new Grants(granted, refused);
    }

    /** Runs one client, or says how it failed (the run goes on with the next client). */
    private static void report(String name, RdmaEndpoint serverEndpoint, RdmaEndpoint clientEndpoint,
                               RdmaListener listener, int keys, int ops, Factory factory) throws InterruptedException {
        try {
            print(run(name, serverEndpoint, clientEndpoint, listener, keys, ops, factory));
        } catch (Throwable t) {
            System.out.println("| " + name + " | failed: " + t + " | | | | | | | | | |");
            Thread.sleep(LeaseLimits.DEFAULT.grace().toMillis() * 2);
        }
    }

    private static void print(Result r) {
        System.out.printf(Locale.ROOT,
                "| %s | %,d | %,d | %.1f%% | %,d | %.0f | %,.0f | %.0f | %.0f | %,.0f | %.0f |%n",
                r.client(), r.gets(), r.offers(), 100 * r.hitRatio(), r.busy(), r.p50(), r.p99(), r.hitP50(),
                r.missP50(), r.mean(), r.cpuPerOp());
    }

    private KvWorkload() {}
}
