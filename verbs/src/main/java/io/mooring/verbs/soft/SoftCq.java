package io.mooring.verbs.soft;

import io.mooring.verbs.Errno;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.spi.CompletionSink;
import io.mooring.verbs.spi.CqOps;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A completion queue of fixed capacity: a ring of completion entries in primitive arrays, so pushing and polling
 * allocate nothing once the ring has grown — up to the capacity, to the most completions that waited at once (an
 * endpoint sizes its CQ for every session it may hold, most of which are quiet). Overrunning it is an error, as on a
 * NIC (rxe's {@code rxe_cq_post}, mlx5): the completion is lost, the context's async events get
 * {@code IBV_EVENT_CQ_ERR} (once: the CQ stays in error), the QP whose completion was lost moves to ERROR (its pusher
 * sees {@link #push} fail), and polling throws EIO.
 */
final class SoftCq implements CqOps {
    /** {@code IBV_EVENT_CQ_ERR}. */
    private static final int CQ_ERR = 0;

    final SoftContext context;
    final int id;
    final AtomicInteger users = new AtomicInteger(); // QPs on it; destroying it with any left fails with EBUSY
    private final int capacity;
    /** The entries a ring starts with. */
    private static final int FIRST = 16;

    // the ring, guarded by this
    private long[] wrIds;
    private int[] statuses;
    private int[] opcodes;
    private int[] byteLengths;
    private int[] immediates;
    private int[] flags;
    private int[] qpNumbers;
    private int head;
    private int count;
    private final Semaphore events = new Semaphore(0);
    private boolean armed;      // guarded by this
    private boolean overrun;    // guarded by this

    SoftCq(SoftContext context, int id, int capacity) {
        this.context = context;
        this.id = id;
        this.capacity = capacity;
        resize(Math.min(capacity, FIRST));
    }

    /** Makes the ring {@code size} entries, the waiting ones first, in order (caller holds the lock or constructs). */
    private void resize(int size) {
        long[] w = new long[size];
        int[][] ints = new int[6][size];
        for (int i = 0; i < count; i++) {
            int from = (head + i) % wrIds.length;
            w[i] = wrIds[from];
            ints[0][i] = statuses[from];
            ints[1][i] = opcodes[from];
            ints[2][i] = byteLengths[from];
            ints[3][i] = immediates[from];
            ints[4][i] = flags[from];
            ints[5][i] = qpNumbers[from];
        }
        wrIds = w;
        statuses = ints[0];
        opcodes = ints[1];
        byteLengths = ints[2];
        immediates = ints[3];
        flags = ints[4];
        qpNumbers = ints[5];
        head = 0;
    }

    /**
     * Adds a completion; {@code flags} are {@code IBV_WC_*} flags. The soft NIC has no vendor syndromes: 0.
     *
     * @return false if the completion was lost (the CQ is full, or overran before): its QP must move to ERROR
     */
    boolean push(long wrId, int status, int opcode, int byteLength, int immediate, int flags, int qpNumber) {
        boolean overran;
        synchronized (this) {
            if (overrun) return false;
            overran = count == capacity;
            if (overran) {
                overrun = true;
            } else {
                if (count == wrIds.length) resize(Math.min(capacity, 2 * count));
                int at = (head + count++) % wrIds.length;
                wrIds[at] = wrId;
                statuses[at] = status;
                opcodes[at] = opcode;
                byteLengths[at] = byteLength;
                immediates[at] = immediate;
                this.flags[at] = flags;
                qpNumbers[at] = qpNumber;
                if (!armed) return true;
                armed = false;
            }
        }
        if (overran) {
            context.events.event(CQ_ERR, this, 0); // the one async event, raised outside the ring's lock
            return false;
        }
        events.release();
        return true;
    }

    @Override
    public int poll(int max, CompletionSink sink) {
        int n = 0;
        while (n < max) {
            long wrId;
            int status;
            int opcode;
            int byteLength;
            int immediate;
            int flag;
            int qpNumber;
            synchronized (this) {
                if (overrun) {
                    throw new VerbsException("ibv_poll_cq", Errno.EIO.number(), "cq " + id, "the completion queue"
                            + " overran its capacity of " + capacity + " and is unusable; size it for the queue"
                            + " depths of every QP on it");
                }
                if (count == 0) break;
                wrId = wrIds[head];
                status = statuses[head];
                opcode = opcodes[head];
                byteLength = byteLengths[head];
                immediate = immediates[head];
                flag = flags[head];
                qpNumber = qpNumbers[head];
                head = (head + 1) % wrIds.length;
                count--;
            }
            sink.completion(wrId, status, opcode, 0, byteLength, immediate, flag, qpNumber); // outside: it may post
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

    /** A permit like an event's: the waiter returns and polls, finding nothing new, as after a stale event. */
    @Override
    public void wake() {
        events.release();
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
