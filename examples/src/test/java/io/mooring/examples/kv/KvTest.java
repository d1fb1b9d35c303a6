package io.mooring.examples.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.LeaseLimits;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.testing.CapturedLog;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The cache's promises through its own API: a GET returns the last PUT; a value once offered is read again without
 * asking; another client's PUT revokes the old value's lease, after which a GET returns the new value; many clients at
 * once only ever read whole values; nothing is left in the server's arena at the end.
 */
class KvTest {
    /** The sessions' INFO lines (peers closing, refusals) are expected; kept out of the build output. */
    @RegisterExtension
    final CapturedLog log = new CapturedLog("io.mooring.lease");

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * A server serving {@code sessions} clients on a virtual thread, and an endpoint on another device for the clients;
     * its close checks that every stored value and buffer went back to the server's arena.
     */
    private static final class Cache implements AutoCloseable {
        final Kv.Memory serverMemory = Kv.open("soft:soft0");
        final Kv.Memory clientMemory = Kv.open("soft:soft0");
        final KvServer server = new KvServer();
        final RdmaEndpoint serverEndpoint;
        final RdmaEndpoint clientEndpoint = RdmaEndpoint.builder(clientMemory.pd(), clientMemory.arena()).build();
        final RdmaListener listener;
        final Thread serving;

        Cache(int sessions) throws IOException {
            this(sessions, LeaseLimits.DEFAULT);
        }

        Cache(int sessions, LeaseLimits limits) throws IOException {
            serverEndpoint = RdmaEndpoint.builder(serverMemory.pd(), serverMemory.arena()).limits(limits).build();
            listener = serverEndpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            serving = Thread.ofVirtual().start(() -> {
                try {
                    server.serve(listener, sessions);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
        }

        RdmaSession connect() throws Exception {
            return clientEndpoint.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
        }

        long leasesGranted() {
            return serverEndpoint.sessions().stream().mapToLong(s -> s.leases().stats().granted()).sum();
        }

        long leasesRefused() {
            return serverEndpoint.sessions().stream().mapToLong(s -> s.leases().stats().refused()).sum();
        }

        @Override
        public void close() {
            try {
                serving.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            server.clear();
            listener.close();
            clientEndpoint.close();
            serverEndpoint.close();
            serverMemory.arena().flushThreadCaches();
            long live = serverMemory.arena().stats().liveBlocks();
            clientMemory.close();
            serverMemory.close();
            assertEquals(0, live, "stored values and buffers all returned");
        }
    }

    @Test
    void getsReturnTheLastPutAndAReplacedValueIsRevokedFromEveryClient() throws Exception {
        try (var cache = new Cache(2)) {
            try (RdmaSession s1 = cache.connect(); RdmaSession s2 = cache.connect();
                 var alice = new KvClient(s1, LeaseLimits.DEFAULT); var bob = new KvClient(s2, LeaseLimits.DEFAULT)) {
                assertNull(alice.get("k"), "no value yet");
                alice.put("k", bytes("first"));
                assertArrayEquals(bytes("first"), alice.get("k"));
                long offered = cache.leasesGranted();
                assertArrayEquals(bytes("first"), alice.get("k"));
                assertEquals(offered, cache.leasesGranted(), "read again through the same lease");

                bob.put("k", bytes("second value")); // answered once alice's lease of the old value was revoked
                assertArrayEquals(bytes("second value"), alice.get("k"), "no GET after the PUT reads the old value");
                assertEquals(1, alice.revokedLeases());
                assertEquals(null, s1.lostReason());
            }
        }
    }

    /**
     * Clients on virtual threads PUT and GET the same few keys at once: a value may be replaced — its lease revoked —
     * between the offer a GET asked for and the READ of it, and that GET asks again; every GET returns some whole PUT.
     */
    @Test
    void manyClientsOnTheSameKeysReadOnlyWholeValues() throws Exception {
        int clients = 6;
        try (var cache = new Cache(clients)) {
            List<Future<?>> running = new ArrayList<>();
            try (var threads = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int c = 0; c < clients; c++) {
                    var random = new SplittableRandom(c);
                    running.add(threads.submit(() -> {
                        try (RdmaSession session = cache.connect(); var client = new KvClient(session, LeaseLimits.DEFAULT)) {
                            for (int i = 0; i < 2_000; i++) {
                                String key = "key-" + random.nextInt(4);
                                if (random.nextInt(100) < 30) client.put(key, wholeValue(random.nextLong()));
                                else assertWhole(key, client.get(key));
                            }
                        }
                        return null;
                    }));
                }
            }
            for (var r : running) r.get();
        }
    }

    /**
     * Tasks of one client call at once over its session — GETs of any key, PUTs of their own — and every GET returns a
     * whole value no older than the key's last PUT completed before it began: a PUT replaces values other tasks hold
     * leases of and read, revoking those leases, and the session goes on.
     */
    @Test
    void tasksOfOneClientCallAtOnceAndNoGetIsStaleOrTorn() throws Exception {
        int tasks = 16;
        try (var cache = new Cache(1); RdmaSession session = cache.connect();
             var client = new KvClient(session, LeaseLimits.DEFAULT, tasks)) {
            List<String> report = new KvLoad(client, 8, tasks).run(0, 4_000);
            assertTrue(client.revokedLeases() > 0, "PUTs revoked leases the client held: " + report);
            assertTrue(report.getLast().contains("16 tasks"), report::toString);
            assertEquals(null, session.lostReason());
        }
    }

    /**
     * A client reading more keys than the server leases one host (1,024 by default; 8 here) gets them all, and is never
     * answered BUSY: its lease cache holds no more than the server grants, giving back the least used first.
     */
    @Test
    void aClientReadingMoreKeysThanTheLeaseLimitKeepsItsSession() throws Exception {
        var eight = LeaseLimits.DEFAULT.toBuilder().maxLeases(8).build();
        try (var cache = new Cache(1, eight); RdmaSession session = cache.connect(); var client = new KvClient(session, eight)) {
            for (int i = 0; i < 20; i++) client.put("key-" + i, bytes("value " + i));
            for (int round = 0; round < 2; round++) {
                for (int i = 0; i < 20; i++) assertArrayEquals(bytes("value " + i), client.get("key-" + i));
            }
            assertEquals(null, session.lostReason());
            assertEquals(0, cache.leasesRefused(), "the client's lease cache never holds more than the server grants");
        }
    }

    /**
     * Clients are peers: a request too short, with its key past its end, of an unknown op, a PUT without a value or a
     * GET with one is answered INVALID, its buffer goes back, and the session goes on. Stored, an empty value would end
     * the session of every client that GETs it: it cannot be offered.
     */
    @Test
    void malformedRequestsAreAnsweredInvalidAndCostNothing() throws Exception {
        try (var cache = new Cache(1); RdmaSession session = cache.connect(); var client = new KvClient(session, LeaseLimits.DEFAULT)) {
            for (byte[] request : List.of(new byte[] {Kv.PUT}, new byte[] {Kv.GET, 9, 'k'}, new byte[] {7, 1, 'k'},
                    new byte[] {Kv.PUT, 1, 'e'}, new byte[] {Kv.GET, 1, 'k', 'v'})) {
                assertEquals(Kv.INVALID, status(session, request), Arrays.toString(request));
            }
            assertNull(client.get("e"), "the empty PUT stored nothing");
            assertEquals(null, session.lostReason());
        }
    }

    /** A key past 255 bytes (its length is a byte) or a value that fits no message is refused before it is sent. */
    @Test
    void aKeyOrValuePastItsLimitIsRefusedBeforeItIsSent() throws Exception {
        try (var cache = new Cache(1); RdmaSession session = cache.connect(); var client = new KvClient(session, LeaseLimits.DEFAULT)) {
            assertThrows(IllegalArgumentException.class, () -> client.put("k".repeat(256), bytes("v")));
            assertNull(client.get(""), "nothing stored under the key's length taken modulo 256");
            assertThrows(IllegalArgumentException.class, () -> client.get("k".repeat(256)));
            assertThrows(IllegalArgumentException.class, () -> client.put("k", new byte[0]));
            assertThrows(IllegalArgumentException.class, () -> client.put("k", new byte[session.peerMaxMessageSize()]));
            client.put("k", new byte[session.peerMaxMessageSize() - 3]);
            assertEquals(session.peerMaxMessageSize() - 3, client.get("k").length, "the largest value fits");
        }
    }

    /** Sends {@code request} as it is and returns the reply's status. */
    private static byte status(RdmaSession session, byte... request) throws Exception {
        try (Block message = session.endpoint().arena().allocate(request.length)) {
            MemorySegment.copy(request, 0, message.segment(), ValueLayout.JAVA_BYTE, 0, request.length);
            session.send(message);
        }
        try (InboundMessage reply = session.receive(Duration.ofSeconds(10))) {
            return reply.data().get(ValueLayout.JAVA_BYTE, 0);
        }
    }

    /** 8 to 800 bytes: a token repeated, as many times as the token says. */
    private static byte[] wholeValue(long token) {
        var value = ByteBuffer.allocate(Long.BYTES * (1 + Math.floorMod(token, 100)));
        while (value.hasRemaining()) value.putLong(token);
        return value.array();
    }

    private static void assertWhole(String key, byte[] value) {
        if (value == null) return;
        var longs = ByteBuffer.wrap(value).asLongBuffer();
        long token = longs.get(0);
        assertEquals(wholeValue(token).length, value.length, key + ": a value's length");
        while (longs.hasRemaining()) assertEquals(token, longs.get(), key + ": a value's bytes");
    }
}
