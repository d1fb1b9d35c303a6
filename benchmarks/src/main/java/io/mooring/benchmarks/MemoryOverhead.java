package io.mooring.benchmarks;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.mooring.allocator.ArenaStats;
import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.RdmaDevices;
import io.netty.buffer.AdaptiveByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.concurrent.FastThreadLocalThread;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Memory overhead: the bytes an allocator holds (for Mooring, the bytes it registered) per byte of live
 * requested memory, for a fixed-seed mix of sizes. Run as {@code ./mooring bench overhead [BLOCKS]}.
 *
 * <p>The mix is log-uniform from 16 B to 64 KiB (every doubling equally likely, sizes anywhere in between, so
 * class rounding shows): half the blocks are at most 512 B, but most of the bytes are in blocks of 4 KiB and
 * more. Each allocator gets the same sequence: {@code BLOCKS} live blocks ("filled"), then three rounds that
 * free a random half and allocate fresh sizes in their place ("churned"; the live count stays the same).
 *
 * <p>Footprints: Mooring's {@code registeredBytes} (chunks registered with the PD, 64 MiB each by default, so
 * small heaps pay for the last chunk's free tail) and {@code activeBytes} (live blocks at their class sizes:
 * the overhead a large heap tends to); Netty's {@code usedDirectMemory} (its chunks); jemalloc's
 * {@code stats.mapped} (bytes in its active extents).
 */
public final class MemoryOverhead {
    static final long SEED = 20_250_611L;
    static final int MIN = 16;
    static final int MAX = 64 << 10;

    /** One measurement: what an allocator held for {@code requested} live bytes. */
    record Row(String allocator, String phase, long requested, long footprint) {
        double ratio() {
            return (double) footprint / requested;
        }
    }

    /** An allocator under test: allocates a slot, frees it, and says how many bytes it holds. */
    private interface Subject extends AutoCloseable {
        void allocate(int slot, int size);

        void free(int slot);

        /** Named footprints, the first being the one compared. */
        List<Row> footprint(String phase, long requested);

        @Override
        void close();
    }

    private MemoryOverhead() {}

    public static void main(String[] args) throws Exception {
        int blocks = args.length > 0 ? Integer.parseInt(args[0]) : 50_000;
        List<Row> rows = onFastThread(() -> measure(blocks));
        print(rows, blocks, System.out);
    }

    /** Runs {@code work} on a Netty FastThreadLocalThread, as the benchmarks do. */
    static <T> T onFastThread(java.util.concurrent.Callable<T> work) throws Exception {
        AtomicReference<T> result = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = new FastThreadLocalThread(() -> {
            try {
                result.set(work.call());
            } catch (Throwable e) {
                failure.set(e);
            }
        }, "overhead");
        t.start();
        t.join();
        if (failure.get() instanceof Exception e) throw e;
        if (failure.get() instanceof Error e) throw e;
        return result.get();
    }

    /** Every allocator through the same fill-then-churn sequence. */
    static List<Row> measure(int blocks) {
        List<Row> rows = new ArrayList<>();
        try (Subject s = new Mooring(blocks)) {
            rows.addAll(run(s, blocks));
        }
        try (Subject s = new Netty("netty pooled", new PooledByteBufAllocator(true), blocks)) {
            rows.addAll(run(s, blocks));
        }
        try (Subject s = new Netty("netty adaptive", new AdaptiveByteBufAllocator(true), blocks)) {
            rows.addAll(run(s, blocks));
        }
        try (Subject s = new Jemalloc(blocks)) {
            rows.addAll(run(s, blocks));
        }
        return rows;
    }

    private static List<Row> run(Subject s, int blocks) {
        var random = new SplittableRandom(SEED);
        int[] sizes = new int[blocks];
        long requested = 0;
        for (int i = 0; i < blocks; i++) {
            sizes[i] = nextSize(random);
            s.allocate(i, sizes[i]);
            requested += sizes[i];
        }
        List<Row> rows = new ArrayList<>(s.footprint("filled", requested));
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < blocks; i++) {
                if (random.nextBoolean()) {
                    s.free(i);
                    requested -= sizes[i];
                    sizes[i] = nextSize(random);
                    s.allocate(i, sizes[i]);
                    requested += sizes[i];
                }
            }
        }
        rows.addAll(s.footprint("churned", requested));
        for (int i = 0; i < blocks; i++) s.free(i);
        return rows;
    }

    /** Log-uniform in [MIN, MAX]. */
    static int nextSize(SplittableRandom random) {
        double log2 = Math.log(MIN) / Math.log(2) + random.nextDouble() * (Math.log((double) MAX / MIN) / Math.log(2));
        return (int) Math.min(MAX, Math.round(Math.pow(2, log2)));
    }

    static void print(List<Row> rows, int blocks, PrintStream out) {
        out.printf(Locale.ROOT, "memory overhead: %,d live blocks, log-uniform %d B..%d KiB, seed %d%n",
                blocks, MIN, MAX >> 10, SEED);
        out.printf(Locale.ROOT, "%-34s %-8s %14s %14s %7s%n", "allocator (footprint)", "phase", "requested B",
                "footprint B", "ratio");
        for (Row r : rows) {
            out.printf(Locale.ROOT, "%-34s %-8s %,14d %,14d %7.3f%n", r.allocator, r.phase, r.requested, r.footprint,
                    r.ratio());
        }
    }

    private static final class Mooring implements Subject {
        private final ResourceGraph graph = ResourceGraph.builder().name("overhead").build();
        private final RdmaArena arena;
        private final Block[] live;

        Mooring(int blocks) {
            arena = RdmaArena.builder(RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain())
                    .name("overhead").checked(false).build();
            live = new Block[blocks];
        }

        @Override
        public void allocate(int slot, int size) {
            live[slot] = arena.allocate(size);
            live[slot].segment().set(JAVA_LONG, 0, size);
        }

        @Override
        public void free(int slot) {
            live[slot].close();
            live[slot] = null;
        }

        @Override
        public List<Row> footprint(String phase, long requested) {
            ArenaStats s = arena.stats();
            return List.of(new Row("mooring (registeredBytes)", phase, requested, s.registeredBytes()),
                    new Row("mooring (activeBytes)", phase, requested, s.activeBytes()));
        }

        @Override
        public void close() {
            arena.close();
            graph.close();
        }
    }

    private static final class Netty implements Subject {
        private final String name;
        private final io.netty.buffer.ByteBufAllocator allocator;
        private final ByteBuf[] live;

        Netty(String name, io.netty.buffer.ByteBufAllocator allocator, int blocks) {
            this.name = name;
            this.allocator = allocator;
            this.live = new ByteBuf[blocks];
        }

        @Override
        public void allocate(int slot, int size) {
            live[slot] = allocator.directBuffer(size);
            live[slot].setLongLE(0, size);
        }

        @Override
        public void free(int slot) {
            live[slot].release();
            live[slot] = null;
        }

        @Override
        public List<Row> footprint(String phase, long requested) {
            long used = ((ByteBufAllocatorMetricProvider) allocator).metric().usedDirectMemory();
            return List.of(new Row(name + " (usedDirectMemory)", phase, requested, used));
        }

        @Override
        public void close() {}
    }

    private static final class Jemalloc implements Subject {
        private final MemorySegment[] live;

        Jemalloc(int blocks) {
            live = new MemorySegment[blocks];
        }

        @Override
        @SuppressWarnings("restricted") // a segment over the bytes malloc just returned
        public void allocate(int slot, int size) {
            try {
                live[slot] = ((MemorySegment) Malloc.Jemalloc.MALLOC.invokeExact((long) size)).reinterpret(size);
            } catch (Throwable e) {
                throw new IllegalStateException(e);
            }
            if (live[slot].address() == 0) throw new OutOfMemoryError("jemalloc malloc(" + size + ")");
            live[slot].set(JAVA_LONG, 0, size);
        }

        @Override
        public void free(int slot) {
            try {
                Malloc.Jemalloc.FREE.invokeExact(live[slot]);
            } catch (Throwable e) {
                throw new IllegalStateException(e);
            }
            live[slot] = null;
        }

        @Override
        public List<Row> footprint(String phase, long requested) {
            Malloc.Jemalloc.refresh();
            return List.of(new Row("jemalloc (stats.mapped)", phase, requested,
                    Malloc.Jemalloc.statistic("stats.mapped")));
        }

        @Override
        public void close() {}
    }
}
