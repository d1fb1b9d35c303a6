package io.mooring.examples.kv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.testing.CapturedLog;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The cache's promises through its own API: a GET returns the last PUT; a value once offered is read again without
 * asking; another client's PUT revokes the old value's lease, after which a GET returns the new value; nothing is left
 * in the server's arena at the end.
 */
class KvTest {
    /** The sessions' INFO lines (peers closing, refusals) are expected; kept out of the build output. */
    @RegisterExtension
    final CapturedLog log = new CapturedLog("io.mooring.lease");

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void getsReturnTheLastPutAndAReplacedValueIsRevokedFromEveryClient() throws Exception {
        try (var serverMemory = Kv.open("soft:soft0"); var clientMemory = Kv.open("soft:soft0")) {
            var server = new KvServer();
            try (var serverEndpoint = RdmaEndpoint.builder(serverMemory.pd(), serverMemory.arena()).build();
                 RdmaListener listener = serverEndpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                 var clientEndpoint = RdmaEndpoint.builder(clientMemory.pd(), clientMemory.arena()).build()) {
                var serving = Thread.ofVirtual().start(() -> {
                    try {
                        server.serve(listener, 2);
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                });
                try (RdmaSession s1 = clientEndpoint.connect(listener.address()).get(10, TimeUnit.SECONDS);
                     RdmaSession s2 = clientEndpoint.connect(listener.address()).get(10, TimeUnit.SECONDS);
                     var alice = new KvClient(s1); var bob = new KvClient(s2)) {
                    assertNull(alice.get("k"), "no value yet");
                    alice.put("k", bytes("first"));
                    assertArrayEquals(bytes("first"), alice.get("k"));
                    long offered = serverEndpoint.sessions().stream().mapToLong(s -> s.leases().stats().granted()).sum();
                    assertArrayEquals(bytes("first"), alice.get("k"));
                    assertEquals(offered, serverEndpoint.sessions().stream()
                            .mapToLong(s -> s.leases().stats().granted()).sum(), "read again through the same lease");

                    bob.put("k", bytes("second value")); // the server closes the old block: alice's lease ends
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                    byte[] seen;
                    do {
                        seen = alice.get("k");
                        assertTrue(new String(seen, StandardCharsets.UTF_8).matches("first|second value"),
                                "a GET returns an old or the new value, never reused memory");
                    } while (!new String(seen, StandardCharsets.UTF_8).equals("second value") && System.nanoTime() < deadline);
                    assertArrayEquals(bytes("second value"), seen, "the revocation reached alice");
                    assertEquals(null, s1.lostReason());
                }
                serving.join(10_000);
                server.clear();
            }
            serverMemory.arena().flushThreadCaches();
            assertEquals(0, serverMemory.arena().stats().liveBlocks(), "stored values and buffers all returned");
        }
    }
}
