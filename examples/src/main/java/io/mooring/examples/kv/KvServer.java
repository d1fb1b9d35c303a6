package io.mooring.examples.kv;

import io.mooring.allocator.Block;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.LeaseRefusedException;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.SessionLostException;
import io.mooring.verbs.Access;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

/**
 * The server of a remote key-value cache. A PUT arrives as a message and is stored as it arrived: the block the NIC
 * wrote becomes the value (no copy). A GET is answered with an offer of the stored value, to read only: the client
 * READs it where it lies, and keeps the lease to read it again. Storing a new value closes the old block, which ends
 * its leases (every client is told) before its memory is reused. One virtual thread per client.
 */
public final class KvServer {
    /** How long a client may read a value it was offered before it must ask again. */
    static final Duration LEASE = Duration.ofSeconds(30);

    /** A stored value: the message it came in, and where in its block the value lies. */
    private record Stored(InboundMessage message, int offset, int length) {}

    private final Map<String, Stored> store = new ConcurrentHashMap<>();

    KvServer() {}

    /** Serves {@code sessions} clients (0: until the process ends) on {@code listener}, each on a virtual thread. */
    void serve(RdmaListener listener, int sessions) throws Exception {
        var ended = new CountDownLatch(sessions);
        for (int served = 0; sessions == 0 || served < sessions; served++) {
            RdmaSession session = listener.accept().get();
            Thread.ofVirtual().name("kv-" + session.peerAddress()).start(() -> {
                try (session) {
                    serve(session);
                } finally {
                    ended.countDown();
                }
            });
        }
        ended.await();
    }

    private void serve(RdmaSession session) {
        try (Block reply = session.endpoint().arena().allocate(1)) {
            while (true) {
                InboundMessage request = session.receive();
                var data = request.data();
                byte op = data.get(ValueLayout.JAVA_BYTE, 0);
                int keyLength = Byte.toUnsignedInt(data.get(ValueLayout.JAVA_BYTE, 1));
                String key = new String(data.asSlice(2, keyLength).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
                byte status;
                if (op == Kv.PUT) {
                    request.block().handOff(); // stored: the next PUT of the key, on any client's thread, closes it
                    Stored old = store.put(key, new Stored(request, 2 + keyLength, request.length() - 2 - keyLength));
                    if (old != null) old.message().close(); // ends every lease on the old value first
                    status = Kv.OK;
                } else {
                    request.close();
                    status = offer(session, key) ? Kv.OK : Kv.MISSING;
                }
                reply.segment().set(ValueLayout.JAVA_BYTE, 0, status);
                session.send(reply);
            }
        } catch (SessionLostException e) {
            // the client left
        }
    }

    /** Offers the value of {@code key}, retried if a PUT replaced it meanwhile; false if there is none. */
    private boolean offer(RdmaSession session, String key) {
        while (true) {
            Stored value = store.get(key);
            if (value == null) return false;
            try {
                session.offer(value.message().block(), value.offset(), value.length(), LEASE,
                        EnumSet.of(Access.REMOTE_READ));
                return true;
            } catch (LeaseRefusedException e) {
                if (value.message().block().isOpen()) throw e; // a limit, not a replaced value
            }
        }
    }

    /** Gives every stored value back to the arena. */
    void clear() {
        store.values().forEach(v -> v.message().close());
        store.clear();
    }

    /** Serves {@code sessions} clients (0: forever) on {@code port}, printing "listening on PORT" first. */
    public static void run(String device, int port, int sessions) throws Exception {
        try (var kv = Kv.open(device)) {
            try (RdmaEndpoint endpoint = RdmaEndpoint.builder(kv.pd(), kv.arena()).build();
                 RdmaListener listener = endpoint.listen(port)) {
                System.out.println("listening on " + listener.address().getPort());
                var server = new KvServer();
                server.serve(listener, sessions);
                server.clear();
            }
            System.out.println("server: " + sessions + " client(s) served, " + kv.arena().stats().liveBlocks()
                    + " live blocks");
        }
    }
}
