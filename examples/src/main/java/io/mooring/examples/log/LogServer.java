package io.mooring.examples.log;

import io.mooring.allocator.Block;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.verbs.values.Access;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;

/**
 * The server of a shared append-only log — the write path of Corfu's or FaRM's logs in miniature. It keeps the log in
 * one block and offers it to every writer to write and to update atomically; writers append without its help: one
 * remote fetch-and-add on the log's tail word reserves room, one WRITE with immediate puts the record there and tells
 * the server where (the immediate is the record's offset). The server's CPU moves no byte; it only checks what landed.
 * The first writer to find the log full seals it with a compare-and-swap; each writer ends with a message whose
 * immediate is how many records it appended, so the server knows when it has seen them all. A writer that leaves
 * without one — its process died, its session broke — is done once its session has delivered what it sent.
 */
public final class LogServer {
    /** The log's first 8 bytes: the offset where the next record goes, moved only by writers' fetch-and-add. */
    static final long TAIL = 0;
    /** The next 8: 0 while open, 1 once a writer found the log full and sealed it (one compare-and-swap wins). */
    static final long SEALED = 8;
    /** Where records begin; each starts 8-byte aligned, as the atomics on the header need. */
    static final long START = 64;
    /** A record's header: payload length (u32), writer (u32), CRC32C of the payload (u64). */
    static final int HEADER = 16;

    /** What landed: records, their payload bytes, how many were damaged, and whether a writer sealed the log. */
    public record Report(long records, long bytes, long damaged, boolean sealed) {}

    /** One writer's session: counts what landed through it and ends when its last message's count is reached. */
    private static final class Writer {
        final RdmaSession session;
        final MemorySegment log;
        final CountDownLatch finished;
        final AtomicLong landed = new AtomicLong();
        final AtomicLong bytes = new AtomicLong();
        final AtomicLong damaged = new AtomicLong();
        final AtomicBoolean counted = new AtomicBoolean();
        volatile long announced = -1;

        Writer(RdmaSession session, MemorySegment log, CountDownLatch finished) {
            this.session = session;
            this.log = log;
            this.finished = finished;
        }

        /** Checks each record as its WRITE with immediate completes, until the writer's last message or its end. */
        void serve() {
            session.receiveWriteImmAsync().whenComplete((offset, ended) -> {
                if (ended != null) { // its session ended, and every record it delivered was checked: the writer is done
                    countDown();
                    return;
                }
                check(Integer.toUnsignedLong(offset));
                landed.incrementAndGet();
                countDownOnceAllLanded();
                serve();
            });
        }

        /** The writer's last message: its immediate is how many records it appended (without one: what landed). */
        void awaitCount() {
            session.receiveAsync().thenAccept(last -> {
                try (InboundMessage m = last) {
                    // One queue pair delivers in the order the writer posted: every record's completion came first.
                    announced = m.hasImmediate() ? Integer.toUnsignedLong(m.immediate()) : landed.get();
                }
                countDownOnceAllLanded();
            });
        }

        /** Both callbacks ask after their update, so one of them sees the last record and the count together. */
        private void countDownOnceAllLanded() {
            if (landed.get() == announced) countDown();
        }

        private void countDown() {
            if (counted.compareAndSet(false, true)) finished.countDown();
        }

        /** A record whose offset or length points outside the log counts as damaged too: writers are peers. */
        private void check(long at) {
            int length = at < START || at > log.byteSize() - HEADER ? -1 : log.get(ValueLayout.JAVA_INT_UNALIGNED, at);
            if (length < 0 || length > log.byteSize() - HEADER - at) {
                damaged.incrementAndGet();
                return;
            }
            long crc = log.get(ValueLayout.JAVA_LONG_UNALIGNED, at + 8);
            var checksum = new CRC32C();
            checksum.update(log.asSlice(at + HEADER, length).asByteBuffer());
            if (checksum.getValue() != crc) damaged.incrementAndGet();
            bytes.addAndGet(length);
        }
    }

    private LogServer() {}

    /**
     * Offers a log of {@code size} bytes to each of {@code writers} sessions accepted on {@code listener} (of
     * {@code endpoint}, whose arena holds the log) for
     * {@code lease} (writers renew it), checks every record, and returns what landed once every writer has told its
     * count or left.
     */
    public static Report serve(RdmaEndpoint endpoint, RdmaListener listener, int writers, int size, Duration lease)
            throws Exception {
        var arena = endpoint.arena();
        // Shared: written by the NIC, read on the endpoint's dispatcher, where each record's completion arrives.
        try (Block log = arena.allocateShared(size, 4096)) {
            log.segment().fill((byte) 0);
            log.segment().set(ValueLayout.JAVA_LONG, TAIL, START);
            var finished = new CountDownLatch(writers);
            List<Writer> served = new ArrayList<>();
            try {
                for (int i = 0; i < writers; i++) {
                    RdmaSession session = listener.acceptAsync().get();
                    var writer = new Writer(session, log.segment(), finished);
                    served.add(writer);
                    writer.serve();
                    writer.awaitCount();
                    try {
                        session.offer(log, lease, EnumSet.of(Access.REMOTE_WRITE, Access.REMOTE_ATOMIC));
                    } catch (RuntimeException e) {
                        if (session.lostReason() == null) throw e; // else the writer left already: its end finishes it
                    }
                }
                if (!finished.await(60, TimeUnit.SECONDS)) throw new IllegalStateException("writers did not finish");
            } finally {
                served.forEach(w -> w.session.close()); // ends the log's leases before the block is freed
            }
            return new Report(served.stream().mapToLong(w -> w.landed.get()).sum(),
                    served.stream().mapToLong(w -> w.bytes.get()).sum(),
                    served.stream().mapToLong(w -> w.damaged.get()).sum(),
                    log.segment().get(ValueLayout.JAVA_LONG, SEALED) == 1);
        }
    }
}
