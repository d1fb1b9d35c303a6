package io.mooring.netty;

import io.mooring.lease.RdmaSession;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The messages a {@link MooringChannel} handed its session and that have not completed, counted from any thread, and
 * the session's close, which lets them go out first: their writes have succeeded, so their bytes must arrive — as a
 * socket's kernel sends what it buffered before its FIN. It waits at most a linger (a peer that returns no credit keeps
 * them waiting), then closes the session, once.
 */
final class SessionSends {
    private final AtomicInteger inFlight = new AtomicInteger();
    private final AtomicBoolean closing = new AtomicBoolean();
    private volatile RdmaSession closeWhenDone;

    int inFlight() {
        return inFlight.get();
    }

    void started() {
        inFlight.incrementAndGet();
    }

    /** A send completed (any thread): if it was the last one a close waited for, the session closes now. */
    void completed() {
        RdmaSession s;
        if (inFlight.decrementAndGet() == 0 && (s = closeWhenDone) != null) closeNow(s);
    }

    /** Closes {@code session} once the sends under way complete, or {@code linger} later (zero: at once). */
    void close(RdmaSession session, Duration linger) {
        closeWhenDone = session;
        if (linger.isZero() || inFlight.get() == 0) {
            closeNow(session);
        } else {
            CompletableFuture.delayedExecutor(linger.toNanos(), TimeUnit.NANOSECONDS).execute(() -> closeNow(session));
        }
    }

    /** Revokes, flushes and tears the session down on a thread of its own; once. */
    private void closeNow(RdmaSession session) {
        if (closing.compareAndSet(false, true)) session.closeAsync();
    }
}
