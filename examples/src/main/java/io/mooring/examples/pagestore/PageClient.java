package io.mooring.examples.pagestore;

import io.mooring.allocator.Block;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The crowd of a remote page store: {@code tasks} virtual threads over {@code sessions} sessions to one {@link
 * PageServer}, each doing random operations — a READ of a page through its session's offer of the whole table (again
 * while its checksum says it was torn), or a write by call — and checking every page it READs: whole (its body is the
 * one its seed makes), not stale (no older than the last write whose reply any task had when the READ began) and, at
 * the version a reply named, the very body written.
 */
public final class PageClient {
    private static final Duration WAIT = Duration.ofSeconds(30);

    /** A write a reply confirmed: the page's version and the seed of its body. */
    private record Written(long version, long seed) {}

    private final List<RdmaSession> sessions;
    private final List<RemoteSegment> tables;
    private final int writePercent;
    private final AtomicLongArray confirmed = new AtomicLongArray(Pages.COUNT);
    private final AtomicReferenceArray<Written> written = new AtomicReferenceArray<>(Pages.COUNT);
    private final AtomicLong torn = new AtomicLong();
    private final AtomicLong stale = new AtomicLong();
    private final AtomicLong wrong = new AtomicLong();

    PageClient(List<RdmaSession> sessions, int writePercent) throws Exception {
        this.sessions = sessions;
        this.writePercent = writePercent;
        this.tables = new ArrayList<>();
        for (RdmaSession s : sessions) tables.add(s.receiveOffer(WAIT));
    }

    /** The latencies of one run's READs and writes, in ns, and how long it took. */
    record Run(long[] reads, long[] writes, long nanos) {}

    /** Runs {@code ops} operations over {@code tasks} tasks (task t on session t mod S). */
    Run run(int tasks, int ops, long seed) throws Exception {
        var left = new AtomicLong(ops);
        List<Future<long[][]>> done = new ArrayList<>();
        long start = System.nanoTime();
        try (var executor = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int t = 0; t < tasks; t++) {
                int task = t;
                done.add(executor.submit(() -> work(task % sessions.size(), left, new SplittableRandom(seed + task))));
            }
        }
        long nanos = System.nanoTime() - start;
        List<long[]> reads = new ArrayList<>();
        List<long[]> writes = new ArrayList<>();
        for (var f : done) {
            long[][] both = f.get();
            reads.add(both[0]);
            writes.add(both[1]);
        }
        return new Run(concat(reads), concat(writes), nanos);
    }

    /** One task: operations until none are left; its READ and write latencies. */
    private long[][] work(int on, AtomicLong left, SplittableRandom random) throws Exception {
        RdmaSession session = sessions.get(on);
        RemoteSegment table = tables.get(on);
        var reads = new Latencies();
        var writes = new Latencies();
        try (Block page = session.endpoint().arena().allocate(Pages.BYTES, 64);
             Block request = session.endpoint().arena().allocate(Pages.WRITE_REQUEST, 64)) {
            MemorySegment pageBytes = page.segment(); // where every READ of this task lands
            while (left.getAndDecrement() > 0) {
                int p = random.nextInt(Pages.COUNT);
                long t = System.nanoTime();
                if (random.nextInt(100) < writePercent) {
                    write(session, request, p, random.nextLong());
                    writes.add(System.nanoTime() - t);
                } else {
                    read(table, page, pageBytes, p);
                    reads.add(System.nanoTime() - t);
                }
            }
        }
        return new long[][] {reads.sorted(), writes.sorted()};
    }

    /** READs page {@code p} into {@code page} (whose bytes are {@code m}) until it arrives whole, and checks it. */
    private void read(RemoteSegment table, Block page, MemorySegment m, int p) {
        long atLeast = confirmed.get(p);
        while (true) {
            table.read(page, (long) p * Pages.BYTES);
            if (Pages.checksumHolds(m, 0)) break;
            torn.incrementAndGet(); // a write landed during the READ: read again
        }
        long version = Pages.version(m);
        Written w = written.get(p);
        if (!Pages.bodyIsWhole(m, Pages.HEADER) || w != null && w.version() == version && w.seed() != Pages.seed(m)) {
            wrong.incrementAndGet();
        }
        if (version < atLeast) stale.incrementAndGet();
    }

    private void write(RdmaSession session, Block request, int p, long seed) throws Exception {
        MemorySegment m = request.segment();
        m.set(ValueLayout.JAVA_LONG, 0, p);
        Pages.fillBody(m, Long.BYTES, seed);
        long version;
        try (InboundMessage reply = session.call(request, WAIT)) {
            version = reply.data().get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        }
        var w = new Written(version, seed);
        written.accumulateAndGet(p, w, (old, mine) -> old == null || mine.version() > old.version() ? mine : old);
        confirmed.accumulateAndGet(p, version, Math::max);
    }

    /**
     * Connects {@code sessions} sessions to the server at {@code server} from {@code device}, runs {@code warmup}
     * operations untimed and {@code ops} timed over {@code tasks} tasks, and reports.
     */
    public static List<String> run(String device, InetSocketAddress server, int sessions, int tasks, int warmup,
                                   int ops, int writePercent) throws Exception {
        try (var memory = Pages.Memory.open(device); RdmaEndpoint endpoint = PageServer.endpoint(memory)) {
            List<RdmaSession> open = new ArrayList<>();
            try {
                for (int i = 0; i < sessions; i++) open.add(endpoint.connectAsync(server).get());
                var client = new PageClient(open, writePercent);
                if (warmup > 0) client.run(tasks, warmup, 1);
                Run run = client.run(tasks, ops, 2);
                return client.report(run, tasks, sessions);
            } finally {
                for (RdmaSession s : open) s.close();
            }
        }
    }

    private List<String> report(Run run, int tasks, int sessions) {
        double seconds = run.nanos() / 1e9;
        return List.of(String.format(Locale.ROOT, "client: %d tasks over %d session(s): %d READs and %d writes in %.2f s,"
                        + " %.0f reads/s", tasks, sessions, run.reads().length, run.writes().length, seconds,
                        run.reads().length / seconds),
                "client: read " + percentiles(run.reads()) + ", write " + percentiles(run.writes()),
                "client: " + torn.get() + " torn READs read again; delivered: " + stale.get() + " stale, " + wrong.get()
                        + " wrong");
    }

    private static String percentiles(long[] sorted) {
        if (sorted.length == 0) return "none";
        return String.format(Locale.ROOT, "p50 %.1f µs p99 %.1f µs", sorted[sorted.length / 2] / 1e3,
                sorted[(int) Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] / 1e3);
    }

    private static long[] concat(List<long[]> parts) {
        long[] all = parts.stream().flatMapToLong(Arrays::stream).toArray();
        Arrays.sort(all);
        return all;
    }

    /** A growing array of latencies (no boxing on the measured path). */
    private static final class Latencies {
        private long[] nanos = new long[1024];
        private int n;

        void add(long t) {
            if (n == nanos.length) nanos = Arrays.copyOf(nanos, 2 * n);
            nanos[n++] = t;
        }

        long[] sorted() {
            long[] s = Arrays.copyOf(nanos, n);
            Arrays.sort(s);
            return s;
        }
    }
}
