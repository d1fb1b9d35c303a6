package io.mooring.examples.kv;

import io.mooring.allocator.Block;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.verbs.values.Access;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

/**
 * The server of a remote key-value cache. A PUT arrives as a call and is stored as it arrived: the block the NIC
 * wrote becomes the value (no copy). A GET is answered with an offer of the stored value, to read only: the client
 * READs it where it lies, and keeps the lease to read it again. Storing a new value closes the old block, which ends
 * its leases before its memory is reused: each client is asked to stop, its READs in flight finish, then the key goes.
 *
 * <p>It needs no thread of its own: it is written on the async forms, so each request is served where its message
 * arrives — on the endpoint's dispatcher — and the reply goes out from there, with no hand-off to another thread on the
 * path. Code there must not block (a blocking call there is refused), which this code never does.
 */
public final class KvServer {
    /** How long a client may read a value it was offered before it must ask again. */
    static final Duration LEASE = Duration.ofSeconds(30);

    /** A stored value: the message it came in, and where in its block the value lies. */
    private record Stored(InboundMessage message, int offset, int length) {}

    private final Map<String, Stored> store = new ConcurrentHashMap<>();

    KvServer() {}

    /** Serves {@code sessions} clients (0: until the process ends) on {@code listener}. */
    void serve(RdmaListener listener, int sessions) throws Exception {
        var ended = new CountDownLatch(sessions);
        for (int served = 0; sessions == 0 || served < sessions; served++) {
            RdmaSession session = listener.acceptAsync().get();
            // Written where requests are served, closed wherever the session's end is learnt: shared, one per client.
            Block reply = session.endpoint().arena().allocateShared(1, 1);
            serveNext(session, reply, ended);
        }
        ended.await();
    }

    /** Serves the session's next request, then the one after, until the client leaves. */
    private void serveNext(RdmaSession session, Block reply, CountDownLatch ended) {
        session.receiveAsync()
                .thenCompose(request -> serve(session, request).thenCompose(status -> {
                    reply.segment().set(ValueLayout.JAVA_BYTE, 0, status);
                    // A call gets its reply (also once the request was closed or kept), else a message.
                    return request.isCall() ? request.replyAsync(reply, 1) : session.sendAsync(reply, 1);
                }))
                .whenComplete((sent, error) -> {
                    if (error == null) {
                        serveNext(session, reply, ended);
                    } else { // the client left (or broke the protocol): its last reply is done with
                        reply.close();
                        session.closeAsync().whenComplete((v, e) -> ended.countDown());
                    }
                });
    }

    /** Serves one request; the future has the reply's status, and a GET's offer has gone out. */
    private CompletableFuture<Byte> serve(RdmaSession session, InboundMessage request) {
        var data = request.data();
        byte op = request.length() < 2 ? 0 : data.get(ValueLayout.JAVA_BYTE, 0);
        int keyLength = request.length() < 2 ? 0 : Byte.toUnsignedInt(data.get(ValueLayout.JAVA_BYTE, 1));
        int valueLength = request.length() - 2 - keyLength;
        if (op == Kv.GET ? valueLength != 0 : op != Kv.PUT || valueLength <= 0) { // clients are peers: check
            request.close();
            return CompletableFuture.completedFuture(Kv.INVALID);
        }
        String key = new String(data.asSlice(2, keyLength).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
        if (op == Kv.PUT) {
            request.block().handOff(); // stored: the next PUT of the key, or clear(), closes it
            Stored old = store.put(key, new Stored(request, 2 + keyLength, valueLength));
            if (old != null) old.message().close(); // ends every lease on the old value first
            return CompletableFuture.completedFuture(Kv.OK);
        }
        request.close();
        return offer(session, key);
    }

    /** Offers the value of {@code key} (MISSING if there is none), again if a PUT replaced it meanwhile. */
    private CompletableFuture<Byte> offer(RdmaSession session, String key) {
        Stored value = store.get(key);
        if (value == null) return CompletableFuture.completedFuture(Kv.MISSING);
        Block block = value.message().block();
        return session.offerAsync(block, value.offset(), value.length(), LEASE, EnumSet.of(Access.REMOTE_READ))
                .handle((lease, refused) -> refused == null ? CompletableFuture.completedFuture(Kv.OK)
                        : block.isOpen() ? CompletableFuture.completedFuture(Kv.BUSY) // a limit, not a new value
                        : offer(session, key))
                .thenCompose(status -> status);
    }

    /** Gives every stored value back to the arena. */
    void clear() {
        store.values().forEach(v -> v.message().close());
        store.clear();
    }

    /**
     * Serves {@code sessions} clients (0: forever) on {@code port}, printing "listening on PORT" first; a client's
     * handshake may take {@code handshakeTimeout}.
     */
    public static void run(String device, int port, int sessions, Duration handshakeTimeout) throws Exception {
        try (var kv = Kv.open(device)) {
            // Clients need not trust each other: no one address may take more than a quarter of the 256 sessions.
            try (RdmaEndpoint endpoint = RdmaEndpoint.builder(kv.pd(), kv.arena()).maxSessionsPerPeer(64)
                    .handshakeTimeout(handshakeTimeout).build();
                 RdmaListener listener = endpoint.listen(port)) {
                System.out.println("listening on " + listener.address().getPort());
                var server = new KvServer();
                server.serve(listener, sessions);
                server.clear();
            }
            // A block closed by another thread than its allocator's is collected up to 20 ms later: closed, not live.
            var stats = kv.arena().stats();
            System.out.println("server: " + sessions + " client(s) served, "
                    + (stats.liveBlocks() - stats.uncollectedFrees()) + " live blocks");
        }
    }
}
