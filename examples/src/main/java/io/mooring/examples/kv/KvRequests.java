package io.mooring.examples.kv;

import io.mooring.allocator.Block;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.RdmaSession;
import io.mooring.lifecycle.MooringTimeoutException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A client's requests to a {@link KvServer} ({@link Kv}'s protocol), each a call from a block of the server's message
 * size, taken for the call until its reply came. Many may be in flight, from any threads: blocks come back to a pool
 * of {@code inFlight}, so as many calls at once reuse theirs and more allocate their own.
 */
final class KvRequests implements AutoCloseable {
    /** How long a reply, or the offer after it, may take. */
    static final Duration WAIT = Duration.ofSeconds(10);

    private final RdmaSession session;
    private final int pooled;
    private final ArrayDeque<Block> free = new ArrayDeque<>(); // guarded by itself
    private boolean closed;                                      // guarded by free

    KvRequests(RdmaSession session, int inFlight) {
        this.session = session;
        this.pooled = inFlight;
    }

    /** PUTs {@code value} under {@code key} and returns the reply's status. */
    byte put(String key, byte[] value) throws Exception {
        Block request = take();
        int keyLength = encode(request, Kv.PUT, key);
        int room = (int) request.size() - 2 - keyLength;
        if (value.length == 0 || value.length > room) {
            giveBack(request);
            throw new IllegalArgumentException("a value of key " + key + " has 1 to " + room
                    + " bytes (the server's message size), not " + value.length);
        }
        MemorySegment.copy(value, 0, request.segment(), ValueLayout.JAVA_BYTE, 2 + keyLength, value.length);
        try {
            return call(request, 2 + keyLength + value.length).get();
        } catch (ExecutionException e) {
            throw e.getCause() instanceof Exception cause ? cause : e;
        }
    }

    /** GETs {@code key}: a future of the reply's status, an OK followed by the server's offer of the value. */
    CompletableFuture<Byte> get(String key) {
        Block request = take();
        return call(request, 2 + encode(request, Kv.GET, key));
    }

    /** {@link #get(String)}, asking the server to tag its offer with {@code tag}. */
    CompletableFuture<Byte> get(String key, long tag) {
        Block request = take();
        int length = 2 + encode(request, Kv.GET, key);
        request.segment().set(Kv.TAG, length, tag);
        return call(request, length + Long.BYTES);
    }

    /** The UTF-8 bytes of {@code key}, refused if past the 255 its length byte counts. */
    static byte[] keyBytes(String key) {
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        if (k.length > 255) {
            throw new IllegalArgumentException("a key has at most 255 bytes, " + key + " has " + k.length);
        }
        return k;
    }

    private static int encode(Block request, byte op, String key) {
        byte[] k = keyBytes(key);
        MemorySegment m = request.segment();
        m.set(ValueLayout.JAVA_BYTE, 0, op);
        m.set(ValueLayout.JAVA_BYTE, 1, (byte) k.length);
        MemorySegment.copy(k, 0, m, ValueLayout.JAVA_BYTE, 2, k.length);
        return k.length;
    }

    /** Calls with the request's first {@code length} bytes: the reply's status; a late reply is freed. */
    private CompletableFuture<Byte> call(Block request, int length) {
        CompletableFuture<InboundMessage> reply;
        try {
            reply = session.callAsync(request, length);
        } catch (RuntimeException e) {
            giveBack(request);
            throw e;
        }
        String what = "the reply to a " + (request.segment().get(ValueLayout.JAVA_BYTE, 0) == Kv.GET ? "GET" : "PUT");
        return within(reply, what).whenComplete((r, e) -> giveBack(request))
                .thenApply(r -> {
                    try (InboundMessage status = r) {
                        return status.data().get(ValueLayout.JAVA_BYTE, 0);
                    }
                });
    }

    /** {@code future}, failed with a timeout naming {@code what} if it does not complete within {@link #WAIT}. */
    static <T> CompletableFuture<T> within(CompletableFuture<T> future, String what) {
        return future.orTimeout(WAIT.toMillis(), TimeUnit.MILLISECONDS).exceptionallyCompose(e ->
                CompletableFuture.failedFuture(e instanceof TimeoutException
                        ? new MooringTimeoutException(what + " did not come within " + WAIT.toSeconds() + " s") : e));
    }

    /** A request block: a pooled one, or a new one (shared: the call may complete on another thread). */
    private Block take() {
        synchronized (free) {
            if (closed) throw new IllegalStateException("the client is closed");
            Block b = free.poll();
            if (b != null) return b;
        }
        return session.endpoint().arena().allocateShared(session.peerMaxMessageSize(), Long.BYTES);
    }

    private void giveBack(Block request) {
        synchronized (free) {
            if (!closed && free.size() < pooled) {
                free.push(request);
                return;
            }
        }
        request.close();
    }

    @Override
    public void close() {
        synchronized (free) {
            closed = true;
            free.forEach(Block::close);
            free.clear();
        }
    }
}
