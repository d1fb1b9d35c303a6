package io.mooring.benchmarks;

import io.mooring.allocator.Block;
import io.netty.buffer.ByteBuf;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jmh.infra.Control;

/**
 * The bounded single-producer single-consumer ring of {@link HandOff}: buffers go through it in batches of
 * {@value #BATCH}, Mooring blocks and Netty buffers as objects, C allocations as raw addresses.
 *
 * <p>Why it parks: on two cores shared with other processes, a side that waits by spinning or yielding burns CPU
 * that the measurement counts, and how much depends on the scheduler, not on the allocator — the first version
 * (yielding, batches of 64) had errors of ±87–333%. Here a side that must wait parks, and is woken with hysteresis:
 * a parked consumer when the ring is at least half full, a parked producer when it is at least half empty, so one
 * park/unpark pair (a few µs) is spread over {@value #WAKE} buffers and neither side's CPU time depends on how long
 * it waited. A park is bounded by {@link #PATIENCE_NANOS}, so a side notices the end of an iteration even when the
 * other has stopped.
 */
class HandOffRing {
    /** Buffers per invocation, as {@code @OperationsPerInvocation}. */
    static final int BATCH = 128;
    /** Buffers the ring holds: 16 MiB of 4 KiB buffers in flight at most. */
    static final int CAPACITY = 4096;
    /** The fill (for a parked consumer) or room (for a parked producer) that wakes a side. */
    static final int WAKE = CAPACITY / 2;
    private static final long PATIENCE_NANOS = 1_000_000;

    final Object[] objects = new Object[CAPACITY];
    final long[] addresses = new long[CAPACITY];
    /** The C allocator's {@code free} whose addresses are in the ring, for {@link #freeUntaken}. */
    MethodHandle nativeFree;

    /**
     * One side's position and whether it is parked. Each side reads the other's once per batch, so sharing a cache
     * line costs at most a miss per {@value #BATCH} buffers.
     */
    private static final class Side {
        volatile long position;
        volatile boolean parked;
        volatile Thread thread;

        /**
         * Before parking: the caller then checks its condition again and parks only if it still holds. The other
         * side moves its position before reading {@code parked} (both volatile), so one of the two sees the other's
         * write: no wake-up is lost.
         */
        void announcePark() {
            thread = Thread.currentThread();
            parked = true;
        }

        void park() {
            LockSupport.parkNanos(PATIENCE_NANOS);
        }

        void wake() {
            if (parked) LockSupport.unpark(thread);
        }
    }

    private final Side producer = new Side(); // position: buffers published
    private final Side consumer = new Side(); // position: buffers taken

    int slot(long n) {
        return (int) (n & (CAPACITY - 1));
    }

    /** The producer: the position at which to fill a batch, once there is room for one; -1 if the iteration ended. */
    long awaitRoom(Control control) {
        return await(producer, control);
    }

    /** The consumer: the position of the next full batch, once there is one; -1 if the iteration ended. */
    long awaitBatch(Control control) {
        return await(consumer, control);
    }

    private long await(Side side, Control control) {
        long position = side.position;
        while (mustWait(side, position)) {
            side.announcePark();
            if (mustWait(side, position)) side.park();
            side.parked = false;
            // Given up only after a park: an empty invocation still counts BATCH operations, and returning at once
            // would count millions while the other side ends its iteration (JMH's warm-down), as the first version did.
            if (control.stopMeasurement && mustWait(side, position)) return -1;
        }
        return position;
    }

    /** The producer waits for room for a batch, the consumer for a full batch. */
    private boolean mustWait(Side side, long position) {
        return side == producer ? position - consumer.position > CAPACITY - BATCH
                : producer.position - position < BATCH;
    }

    /** The producer: the batch before {@code end} is filled. */
    void publish(long end) {
        producer.position = end;
        if (end - consumer.position >= WAKE) consumer.wake();
    }

    /** The consumer: the batch before {@code end} is freed. */
    void take(long end) {
        consumer.position = end;
        if (producer.position - end <= CAPACITY - WAKE) producer.wake();
    }

    /** Frees what the consumer did not take when an iteration ended (no side runs meanwhile). */
    void freeUntaken() throws Throwable {
        for (long n = consumer.position; n < producer.position; n++) {
            int i = slot(n);
            if (objects[i] instanceof Block b) b.close();
            else if (objects[i] instanceof ByteBuf buf) buf.release();
            else nativeFree.invokeExact(MemorySegment.ofAddress(addresses[i]));
            objects[i] = null;
            addresses[i] = 0;
        }
        consumer.position = producer.position;
    }

    /** The consumer read back what the producer wrote into buffer {@code n}. */
    static void check(long read, long n) {
        if (read != n) throw new AssertionError("buffer " + n + " holds " + read + ": read another buffer");
    }
}
