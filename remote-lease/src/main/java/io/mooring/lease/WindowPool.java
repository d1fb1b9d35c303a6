package io.mooring.lease;

import io.mooring.lifecycle.MooringTimeoutException;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.MemoryWindow;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkCompletionException;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.MwType;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The type 2 memory windows one lease manager binds on its peer's QP (nbs's pooled windows): a window invalidated
 * cleanly is kept for the next lease, one that could not be (the QP failed) is deallocated, which revokes it too — and
 * so is one that has made {@value #MAX_BINDS} binds: a type 2 bind changes only the key's low 8 bits, so one more would
 * bring back a key an earlier lease's peer held; its successor gets a new index.
 */
final class WindowPool {
    /** Binds one window makes before it is replaced: 255 keys in a row differ (8 key bits). */
    static final int MAX_BINDS = 255;
    /** How long a bind or an invalidation may take to complete. */
    static final Duration COMPLETION_WAIT = Duration.ofSeconds(10);

    private final QueuePair qp;
    private final ArrayDeque<MemoryWindow> windows = new ArrayDeque<>(2); // guarded by this
    /** Binds made through each live window. Guarded by this. */
    private final Map<MemoryWindow, Integer> binds = new IdentityHashMap<>();
    private boolean stopped; // guarded by this: windows are retired, not pooled

    WindowPool(QueuePair qp) {
        this.qp = qp;
    }

    ProtectionDomain pd() {
        return qp.pd();
    }

    /**
     * Binds a pooled or new window over {@code [offset, +lease's length)} of {@code region} with the lease's rights.
     *
     * @throws LeaseRefusedException (the future's failure) if the device refused the bind
     */
    CompletableFuture<MemoryWindow> bind(Lease lease, MemoryRegion region, long offset) {
        MemoryWindow window = take();
        CompletableFuture<WorkCompletion> bound;
        try {
            bound = qp.postAsync(WorkRequest.bind(window, region, offset, lease.length(), lease.access()));
        } catch (RuntimeException e) {
            retire(window);
            throw e;
        }
        return bound.orTimeout(COMPLETION_WAIT.toMillis(), TimeUnit.MILLISECONDS).handle((wc, error) -> {
            Throwable cause = error == null ? null : unwrap(error);
            if (cause instanceof WorkCompletionException failed) wc = failed.completion();
            else if (cause != null) {
                retire(window);
                if (cause instanceof TimeoutException) {
                    throw new MooringTimeoutException("the bind of a window for a lease did not complete within "
                            + COMPLETION_WAIT + ": is a CompletionDispatcher polling the QP's send CQ?", cause);
                }
                throw new IllegalStateException("the bind of a window for a lease failed", cause);
            }
            if (wc.status() != WcStatus.SUCCESS) {
                retire(window);
                throw new LeaseRefusedException(ErrorCodes.INVALID_REQUEST, "binding a window failed: " + wc.status());
            }
            return window;
        });
    }

    static Throwable unwrap(Throwable e) {
        return e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
    }

    /** LOCAL_INV of a window; if that cannot complete cleanly, deallocating the window revokes it instead. */
    CompletableFuture<Void> invalidate(MemoryWindow window) {
        CompletableFuture<WorkCompletion> done;
        try {
            done = qp.postAsync(WorkRequest.invalidate(window.rkey()));
        } catch (RuntimeException e) {
            retire(window);
            return CompletableFuture.completedFuture(null);
        }
        return done.orTimeout(COMPLETION_WAIT.toMillis(), TimeUnit.MILLISECONDS).handle((wc, error) -> {
            if (error == null && wc.isSuccess()) give(window);
            else retire(window);
            return null;
        });
    }

    private synchronized MemoryWindow take() {
        MemoryWindow w = windows.poll();
        if (w == null) w = qp.pd().allocateWindow(MwType.TYPE_2);
        binds.merge(w, 1, Integer::sum);
        return w;
    }

    /** Keeps an invalidated window for the next lease, unless the pool stopped or the window made its last bind. */
    private synchronized void give(MemoryWindow window) {
        if (stopped || binds.get(window) >= MAX_BINDS) retire(window);
        else windows.add(window);
    }

    private synchronized void retire(MemoryWindow window) {
        binds.remove(window);
        window.close();
    }

    /** Windows kept for the next lease. */
    synchronized int pooled() {
        return windows.size();
    }

    /** From now on windows are deallocated once invalidated, not kept (the manager stops granting). */
    synchronized void stop() {
        stopped = true;
    }

    /** Deallocates the windows kept; call once no lease holds one. */
    synchronized void close() {
        stopped = true;
        windows.forEach(MemoryWindow::close);
        windows.clear();
        binds.clear();
    }
}
