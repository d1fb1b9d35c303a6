package io.mooring.examples.kv;

import io.mooring.lease.LeaseLimits;
import io.mooring.lease.LeaseStats;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
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
 * The KV workload with more keys than the server leases one host, for the lease cache's figure (docs/verification.md):
 * an in-process server (soft0, default limits: 1,024 leases per host) and, one after the other on the same server,
 * the client with its {@code LeaseCache} and — if {@code scripts/kv-lease-cache.sh} compiled it — the client of the
 * commit before it ({@code KvClientBefore}: an unbounded map, dropped whole on BUSY). Each PUTs every key, warms up,
 * then runs 90% GETs and 10% PUTs of uniformly random keys, every GET checked against the last PUT. Both are measured
 * the same way, from the server's counters: a GET that made the server offer a lease is a miss; a BUSY reply is an
 * offer the server refused for the host's limit.
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

    record Result(String client, int gets, long offers, long busy, double p50Micros, double p99Micros) {
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
        MethodHandle before = before();
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
            System.out.println("| client | GETs | leases offered | GET hit ratio | BUSY replies | GET p50 µs | GET p99 µs |");
            System.out.println("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
            for (int round = 0; round < rounds; round++) {
                if (before != null) {
                    report("before (HashMap)", serverEndpoint, clientEndpoint, listener, keys, ops,
                            s -> (Client) before.invoke(s));
                }
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

    /** The client of the commit before the lease cache, adapted by its methods' names; null if not compiled in. */
    private static MethodHandle before() throws Exception {
        Class<?> c;
        try {
            c = Class.forName("io.mooring.examples.kv.KvClientBefore");
        } catch (ClassNotFoundException absent) {
            return null;
        }
        var lookup = MethodHandles.privateLookupIn(c, MethodHandles.lookup());
        MethodHandle create = lookup.findConstructor(c, MethodType.methodType(void.class, RdmaSession.class));
        MethodHandle put = lookup.findVirtual(c, "put", MethodType.methodType(void.class, String.class, byte[].class));
        MethodHandle get = lookup.findVirtual(c, "get", MethodType.methodType(byte[].class, String.class));
        MethodHandle close = lookup.findVirtual(c, "close", MethodType.methodType(void.class));
        MethodHandle adapt = MethodHandles.lookup().findStatic(KvWorkload.class, "adapt",
                MethodType.methodType(Client.class, Object.class, MethodHandle.class, MethodHandle.class,
                        MethodHandle.class));
        return MethodHandles.filterReturnValue(create.asType(MethodType.methodType(Object.class, RdmaSession.class)),
                MethodHandles.insertArguments(adapt, 1, put, get, close));
    }

    private static Client adapt(Object client, MethodHandle put, MethodHandle get, MethodHandle close) {
        return new Client() {
            public void put(String key, byte[] value) throws Exception {
                invoke(put, client, key, value);
            }

            public byte[] get(String key) throws Exception {
                return (byte[]) invoke(get, client, key);
            }

            public void close() {
                try {
                    invoke(close, client);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }
        };
    }

    private static Object invoke(MethodHandle h, Object... args) throws Exception {
        try {
            return h.invokeWithArguments(args);
        } catch (Exception | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    interface Factory {
        Client open(RdmaSession session) throws Throwable;
    }

    private static Result run(String name, RdmaEndpoint serverEndpoint, RdmaEndpoint clientEndpoint,
                              RdmaListener listener, int keys, int ops, Factory factory) throws Throwable {
        var random = new SplittableRandom(7);
        Map<String, byte[]> expected = new HashMap<>();
        List<Long> gets = new ArrayList<>();
        LeaseStats start = null;
        try (RdmaSession session = clientEndpoint.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
             Client client = factory.open(session)) {
            for (int i = 0; i < keys; i++) put(client, "key-" + i, random, expected);
            for (int i = -ops / 2; i < ops; i++) { // a warm-up of half as many operations, then the measured ones
                if (i == 0) start = serverStats(serverEndpoint);
                String key = "key-" + random.nextInt(keys);
                if (random.nextInt(10) == 0) {
                    put(client, key, random, expected);
                } else {
                    long t = System.nanoTime();
                    byte[] value = client.get(key);
                    if (i >= 0) gets.add(System.nanoTime() - t);
                    if (!Arrays.equals(expected.get(key), value)) throw new IllegalStateException("GET " + key);
                }
            }
            LeaseStats end = serverStats(serverEndpoint);
            long[] sorted = gets.stream().mapToLong(Long::longValue).sorted().toArray();
            return new Result(name, sorted.length, end.granted() - start.granted(), end.refused() - start.refused(),
                    sorted[sorted.length / 2] / 1e3, sorted[(int) (sorted.length * 0.99)] / 1e3);
        } finally {
            Thread.sleep(LeaseLimits.DEFAULT.grace().toMillis() * 2); // the server ends the last revoked leases
        }
    }

    private static void put(Client client, String key, SplittableRandom random, Map<String, byte[]> expected)
            throws Exception {
        byte[] value = new byte[64 + random.nextInt(1024)];
        random.nextBytes(value);
        client.put(key, value);
        expected.put(key, value);
    }

    /** Offers granted and refused by the server's sessions (the last client's has ended before a run starts). */
    private static LeaseStats serverStats(RdmaEndpoint serverEndpoint) {
        long granted = 0;
        long refused = 0;
        for (RdmaSession s : serverEndpoint.sessions()) {
            granted += s.leases().stats().granted();
            refused += s.leases().stats().refused();
        }
        return new LeaseStats(null, 0, 0, granted, 0, 0, 0, refused, 0);
    }

    /** Runs one client, or says how it failed (the run goes on with the next client). */
    private static void report(String name, RdmaEndpoint serverEndpoint, RdmaEndpoint clientEndpoint,
                               RdmaListener listener, int keys, int ops, Factory factory) throws InterruptedException {
        try {
            print(run(name, serverEndpoint, clientEndpoint, listener, keys, ops, factory));
        } catch (Throwable t) {
            System.out.println("| " + name + " | failed: " + t + " | | | | | |");
            Thread.sleep(LeaseLimits.DEFAULT.grace().toMillis() * 2);
        }
    }

    private static void print(Result r) {
        System.out.printf(Locale.ROOT, "| %s | %,d | %,d | %.1f%% | %,d | %.1f | %.1f |%n", r.client(), r.gets(),
                r.offers(), 100 * r.hitRatio(), r.busy(), r.p50Micros(), r.p99Micros());
    }

    private KvWorkload() {}
}
