package io.mooring.verbs.soft;

import io.mooring.verbs.Errno;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.spi.CompletionSink;
import io.mooring.verbs.spi.CqOps;
import java.util.ArrayDeque;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A completion queue of fixed capacity. Overrunning it is an error, as on hardware: the CQ becomes unusable
 * and polling says so (size a CQ for the queue depths of every QP on it).
 */
final class SoftCq implements CqOps {
    private record Entry(long wrId, int status, int opcode, int byteLength, int immediate, int flags, int qpNumber) {}

    final SoftContext context;
    final int id;
    final AtomicInteger users = new AtomicInteger(); // QPs on it; destroying it with any left fails with EBUSY
    private final int capacity;
    private final ArrayDeque<Entry> entries = new ArrayDeque<>();
    private final Semaphore events = new Semaphore(0);
    private boolean armed;      // guarded by this
    private boolean overrun;    // guarded by this

    SoftCq(SoftContext context, int id, int capacity) {
        this.context = context;
        this.id = id;
        this.capacity = capacity;
    }

    /** Adds a completion; {@code flags} are {@code IBV_WC_*} flags. The soft NIC has no vendor syndromes: 0. */
    void push(long wrId, int status, int opcode, int byteLength, int immediate, int flags, int qpNumber) {
        synchronized (this) {
            if (entries.size() == capacity) {
                overrun = true;
                return;
            }
            entries.add(new Entry(wrId, status, opcode, byteLength, immediate, flags, qpNumber));
            if (!armed) return;
            armed = false;
        }
        events.release();
    }

    @Override
    public int poll(int max, CompletionSink sink) {
        int n = 0;
        while (n < max) {
            Entry e;
            synchronized (this) {
                if (overrun) {
                    throw new VerbsException("ibv_poll_cq", Errno.EIO.number(), "cq " + id, "the completion queue"
                            + " overran its capacity of " + capacity + " and is unusable; size it for the queue"
                            + " depths of every QP on it");
                }
                e = entries.poll();
            }
            if (e == null) break;
            sink.completion(e.wrId, e.status, e.opcode, 0, e.byteLength, e.immediate, e.flags, e.qpNumber);
            n++;
        }
        return n;
    }

    @Override
    public void requestNotify() {
        synchronized (this) {
            armed = true;
        }
    }

    @Override
    public boolean awaitEvent(long timeoutNanos) throws InterruptedException {
        return events.tryAcquire(timeoutNanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public void destroy() {
        if (users.get() > 0) {
            throw new VerbsException("ibv_destroy_cq", Errno.EBUSY.number(), "cq " + id,
                    users.get() + " queue pairs still use it");
        }
        context.children.decrementAndGet();
    }
}
