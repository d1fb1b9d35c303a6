package io.mooring.examples.log;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import io.mooring.verbs.WorkCompletion;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

/**
 * A writer of {@link LogServer}'s log: takes the log the server offers, then appends records until the log is full —
 * each one a fetch-and-add on the tail and a WRITE with immediate, the next record filled while the last one is on the
 * wire — renewing its lease while it writes. Several writers share one peer connection's endpoint: the first session
 * is {@linkplain RdmaSession#connectAgainAsync() connected again} for each other writer, so each has queue pairs of its own.
 */
public final class LogWriter {
    private static final Duration WAIT = Duration.ofSeconds(10);

    /** What one writer did: records appended, lease renewals, and whether its compare-and-swap sealed the log. */
    public record Result(long appended, int renewals, boolean sealed) {}

    private LogWriter() {}

    /**
     * Runs {@code writers} writers of {@code payload}-byte records on virtual threads, each on its own session to the
     * peer of {@code first} (which the first writer uses), and returns what each did.
     */
    public static List<Result> run(RdmaSession first, int writers, int payload, Duration lease) throws Exception {
        if (payload < Long.BYTES) throw new IllegalArgumentException("a payload has at least 8 bytes, not " + payload);
        List<Future<Result>> running = new ArrayList<>();
        try (var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < writers; i++) {
                int id = i;
                running.add(threads.submit(() -> {
                    if (id == 0) return append(first, id, payload, lease);
                    try (RdmaSession again = first.connectAgainAsync().get(WAIT.toSeconds(), TimeUnit.SECONDS)) {
                        return append(again, id, payload, lease);
                    }
                }));
            }
        }
        List<Result> results = new ArrayList<>();
        for (var r : running) results.add(r.get());
        return results;
    }

    /** Appends records of {@code payload} random bytes until the log is full, then tells the server how many. */
    static Result append(RdmaSession session, int id, int payload, Duration lease) throws Exception {
        RdmaArena arena = session.endpoint().arena();
        int size = (int) align8(LogServer.HEADER + payload);
        var random = new SplittableRandom(id);
        long appended = 0;
        int renewals = 0;
        boolean sealed = false;
        try (Block word = arena.allocate(Long.BYTES, Long.BYTES);
             Block a = arena.allocate(size, Long.BYTES);
             Block b = arena.allocate(size, Long.BYTES);
             Block last = arena.allocate(1)) {
            try (RemoteSegment log = session.receiveOffer(WAIT)) {
                CompletableFuture<WorkCompletion> onTheWire = CompletableFuture.completedFuture(null);
                for (Block record = a; ; record = record == a ? b : a) {
                    fill(record.segment(), id, payload, random);
                    if (log.remaining().compareTo(lease.dividedBy(2)) < 0) { // extended before it runs out
                        log.renew(lease);
                        renewals++;
                    }
                    long at = log.fetchAndAdd(word, LogServer.TAIL, size);
                    if (at + size > log.length()) { // full: the first writer to see it seals the log
                        sealed = log.compareAndSwap(word, LogServer.SEALED, 0, 1) == 0;
                        break;
                    }
                    onTheWire.join(); // the other block's record has landed: it may be filled again next round
                    onTheWire = log.writeWithImmAsync(record, at, (int) at);
                    appended++;
                }
                onTheWire.join();
            } // released before the count: once it has every count, the server ends the sessions
            session.sendWithImm(last, (int) appended); // after every record on this queue pair: the count comes last
        }
        return new Result(appended, renewals, sealed);
    }

    private static void fill(MemorySegment record, int id, int payload, SplittableRandom random) {
        MemorySegment data = record.asSlice(LogServer.HEADER, payload);
        for (long i = 0; i < payload; i += Long.BYTES) {
            data.set(ValueLayout.JAVA_LONG_UNALIGNED, Math.min(i, payload - Long.BYTES), random.nextLong());
        }
        var checksum = new CRC32C();
        checksum.update(data.asByteBuffer());
        record.set(ValueLayout.JAVA_INT, 0, payload);
        record.set(ValueLayout.JAVA_INT, 4, id);
        record.set(ValueLayout.JAVA_LONG, 8, checksum.getValue());
    }

    private static long align8(long n) {
        return (n + 7) & -8L;
    }
}
