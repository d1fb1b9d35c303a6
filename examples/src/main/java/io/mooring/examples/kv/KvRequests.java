package io.mooring.examples.kv;

import io.mooring.allocator.Block;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.RdmaSession;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * A client's requests to a {@link KvServer} ({@link Kv}'s protocol), each a call from one block of the server's
 * message size: one request at a time, the next encoded once the last one's reply came.
 */
final class KvRequests implements AutoCloseable {
    /** How long a reply, or the offer after it, may take. */
    static final Duration WAIT = Duration.ofSeconds(10);

    private final RdmaSession session;
    private final Block request;

    KvRequests(RdmaSession session) {
        this.session = session;
        // Shared: a lease cache may load on its own thread (see LeaseCache.Builder.build), one request at a time.
        this.request = session.endpoint().arena().allocateShared(session.peerMaxMessageSize(), Long.BYTES);
    }

    /** PUTs {@code value} under {@code key} and returns the reply's status. */
    byte put(String key, byte[] value) throws Exception {
        int keyLength = encode(Kv.PUT, key);
        int room = (int) request.size() - 2 - keyLength;
        if (value.length == 0 || value.length > room) {
            throw new IllegalArgumentException("a value of key " + key + " has 1 to " + room
                    + " bytes (the server's message size), not " + value.length);
        }
        MemorySegment.copy(value, 0, request.segment(), ValueLayout.JAVA_BYTE, 2 + keyLength, value.length);
        try {
            return call(2 + keyLength + value.length).get();
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception cause ? cause : e;
        }
    }

    /** GETs {@code key}: a future of the reply's status, an OK followed by the server's offer of the value. */
    CompletableFuture<Byte> get(String key) {
        return call(2 + encode(Kv.GET, key));
    }

    /** The UTF-8 bytes of {@code key}, refused if past the 255 its length byte counts. */
    static byte[] keyBytes(String key) {
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        if (k.length > 255) {
            throw new IllegalArgumentException("a key has at most 255 bytes, " + key + " has " + k.length);
        }
        return k;
    }

    private int encode(byte op, String key) {
        byte[] k = keyBytes(key);
        MemorySegment m = request.segment();
        m.set(ValueLayout.JAVA_BYTE, 0, op);
        m.set(ValueLayout.JAVA_BYTE, 1, (byte) k.length);
        MemorySegment.copy(k, 0, m, ValueLayout.JAVA_BYTE, 2, k.length);
        return k.length;
    }

    /** Calls with the request's first {@code length} bytes: the reply's status; a late reply is freed. */
    private CompletableFuture<Byte> call(int length) {
        return session.callAsync(request, length).orTimeout(WAIT.toMillis(), TimeUnit.MILLISECONDS).thenApply(reply -> {
            try (InboundMessage status = reply) {
                return status.data().get(ValueLayout.JAVA_BYTE, 0);
            }
        });
    }

    @Override
    public void close() {
        request.close();
    }
}
