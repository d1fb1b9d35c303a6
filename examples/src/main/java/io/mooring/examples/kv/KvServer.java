package io.mooring.examples.kv;

import io.mooring.allocator.Block;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.SessionEnd;
import io.mooring.verbs.values.Access;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

/**
 * The server of a remote key-value cache. A PUT arrives as a call and is stored as it arrived: the block the NIC
 * wrote becomes the value (no copy). A GET is answered with an offer of the stored value, to read only: the client
 * READs it where it lies, and keeps the lease to read it again. Storing a new value closes the old block, which ends
 * its leases before its memory is reused: each client is asked to stop, its READs in flight finish, then the key goes —
 * and only then is the PUT answered, so no GET begun after the answer reads the old value.
 *
 * <p>It needs no thread of its own: it is written on the async forms, so each request is served where its message
 * arrives — on the endpoint's dispatcher — and the reply goes out from there, with no hand-off to another thread on the
 * path. Code there must not block (a blocking call there is refused), which this code never does. A session's requests
 * are served as they come, many at once: a PUT waiting for the ends of leases holds up no other request.
 */
public final class KvServer {
    /** How long a client may read a value it was offered before it must ask again. */
    static final Duration LEASE = Duration.ofSeconds(30);

    private final Map<String, Stored> store = new ConcurrentHashMap<>();
    private final Revocations revocations = new Revocations();

    KvServer() {}

    /** A stored value: the message it came in, where in its block the value lies, and its leases. */
    private static final class Stored {
        final InboundMessage message;
        final int offset;
        final int length;
        /**
         * Completes as each lease of the value ends (true), or its offer fails (false): those a PUT replacing it waits
         * for.
         */
        private final Set<CompletableFuture<Boolean>> leaseEnds = new HashSet<>(); // guarded by this
        private boolean replaced;                                               // guarded by this

        Stored(InboundMessage message, int offset, int length) {
            this.message = message;
            this.offset = offset;
            this.length = length;
        }

        /** An offer of the value begins: complete what this returns when its lease ended; null once replaced. */
        synchronized CompletableFuture<Boolean> offering() {
            if (replaced) return null;
            var end = new CompletableFuture<Boolean>();
            leaseEnds.add(end);
            end.whenComplete((v, e) -> {
                synchronized (this) {
                    leaseEnds.remove(end);
                }
            });
            return end;
        }

        /**
         * A PUT replaced the value: closing its block ends every lease of it (an offer under way is refused, or ends
         * too); completes once they all ended, each one's time counted in {@code revocations}.
         */
        CompletableFuture<Void> replace(Revocations revocations) {
            List<CompletableFuture<Boolean>> ends;
            synchronized (this) {
                replaced = true;
                ends = List.copyOf(leaseEnds);
            }
            long start = System.nanoTime();
            message.close();
            return CompletableFuture.allOf(ends.stream().map(end -> end.thenAccept(granted -> {
                if (granted) revocations.revoked(System.nanoTime() - start);
            })).toArray(CompletableFuture[]::new));
        }
    }

    /** Serves {@code sessions} clients (0: until the process ends) on {@code listener}. */
    void serve(RdmaListener listener, int sessions) throws Exception {
        var ended = new CountDownLatch(sessions);
        for (int served = 0; sessions == 0 || served < sessions; served++) {
            RdmaSession session = listener.acceptAsync().get();
            session.closed().thenAccept(end -> {
                if (end.how() == SessionEnd.How.LOST) revocations.sessionLost();
            });
            serveNext(session, new Replies(session), ended);
        }
        ended.await();
    }

    /**
     * The replies: a block per status, never written again, so that many replies may go out from each at once. Closed
     * wherever the session's end is learnt: shared.
     */
    private record Replies(Block[] byStatus) implements AutoCloseable {
        Replies(RdmaSession session) {
            this(new Block[] {reply(session, Kv.OK), reply(session, Kv.MISSING), reply(session, Kv.BUSY),
                    reply(session, Kv.INVALID)});
        }

        private static Block reply(RdmaSession session, byte status) {
            Block b = session.endpoint().arena().allocateShared(1, 1);
            b.segment().set(ValueLayout.JAVA_BYTE, 0, status);
            return b;
        }

        Block of(byte status) {
            return byStatus[status];
        }

        @Override
        public void close() {
            for (Block b : byStatus) b.close();
        }
    }

    /** Takes the session's next request, serves it, and takes the one after meanwhile, until the client leaves. */
    private void serveNext(RdmaSession session, Replies replies, CountDownLatch ended) {
        session.receiveAsync().whenComplete((request, error) -> {
            if (error != null) { // the client left (or broke the protocol): its replies are done with
                session.closeAsync().whenComplete((v, e) -> {
                    replies.close();
                    ended.countDown();
                });
                return;
            }
            serveNext(session, replies, ended);
            serve(session, request).thenCompose(status -> {
                Block reply = replies.of(status);
                // A call gets its reply (also once the request was closed or kept), else a message.
                return request.isCall() ? request.replyAsync(reply, 1) : session.sendAsync(reply, 1);
            }).whenComplete((sent, e) -> {
                if (e != null) session.closeAsync(); // the session failed: its receive fails too, and ends it above
            });
        });
    }

    /** Serves one request; the future has the reply's status, and a GET's offer has gone out. */
    private CompletableFuture<Byte> serve(RdmaSession session, InboundMessage request) {
        var data = request.data();
        byte op = request.length() < 2 ? 0 : data.get(ValueLayout.JAVA_BYTE, 0);
        int keyLength = request.length() < 2 ? 0 : Byte.toUnsignedInt(data.get(ValueLayout.JAVA_BYTE, 1));
        int valueLength = request.length() - 2 - keyLength;
        boolean valid = op == Kv.GET ? valueLength == 0 || valueLength == Long.BYTES : op == Kv.PUT && valueLength > 0;
        if (!valid) { // clients are peers: check
            request.close();
            return CompletableFuture.completedFuture(Kv.INVALID);
        }
        String key = new String(data.asSlice(2, keyLength).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
        if (op == Kv.PUT) {
            request.block().handOff(); // stored: the next PUT of the key, or clear(), closes it
            Stored old = store.put(key, new Stored(request, 2 + keyLength, valueLength));
            return old == null ? CompletableFuture.completedFuture(Kv.OK)
                    : old.replace(revocations).thenApply(v -> Kv.OK);
        }
        long tag = valueLength == 0 ? 0 : data.get(Kv.TAG, 2 + keyLength);
        request.close();
        return offer(session, key, tag);
    }

    /** Offers the value of {@code key} (MISSING if there is none), again if a PUT replaced it meanwhile. */
    private CompletableFuture<Byte> offer(RdmaSession session, String key, long tag) {
        Stored value = store.get(key);
        if (value == null) return CompletableFuture.completedFuture(Kv.MISSING);
        CompletableFuture<Boolean> leaseEnded = value.offering();
        if (leaseEnded == null) return offer(session, key, tag); // replaced: the store has the new value
        Block block = value.message.block();
        return session.offerAsync(block, value.offset, value.length, LEASE, EnumSet.of(Access.REMOTE_READ), tag)
                .handle((lease, refused) -> {
                    if (refused == null) {
                        lease.ended().whenComplete((reason, e) -> leaseEnded.complete(true));
                        return CompletableFuture.completedFuture(Kv.OK);
                    }
                    leaseEnded.complete(false);
                    return block.isOpen() ? CompletableFuture.completedFuture(Kv.BUSY) // a limit, not a new value
                            : offer(session, key, tag);
                })
                .thenCompose(status -> status);
    }

    /** Gives every stored value back to the arena. */
    void clear() {
        store.values().forEach(v -> v.message.close());
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
                System.out.println(server.revocations);
            }
            // A block closed by another thread than its allocator's is collected up to 20 ms later: closed, not live.
            var stats = kv.arena().stats();
            System.out.println("server: " + sessions + " client(s) served, "
                    + (stats.liveBlocks() - stats.uncollectedFrees()) + " live blocks");
        }
    }
}
