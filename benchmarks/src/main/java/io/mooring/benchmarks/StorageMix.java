package io.mooring.benchmarks;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * A storage engine's mix, 4096 buffers live ({@link LiveRing}): 70% of requests 64–512 B (keys, small values,
 * headers), 25% 4–16 KiB (pages), 5% 64 KiB–1 MiB (large values, compaction buffers), drawn once from a fixed seed,
 * so every allocator sees the same sequence.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(jvmArgsAppend = {"-Djmh.executor=CUSTOM", "-Djmh.executor.class=io.mooring.benchmarks.FastThreadExecutor",
        "-Dio.netty.leakDetection.level=disabled"})
@Threads(1)
@State(Scope.Thread)
public class StorageMix {
    static final int LIVE = 4096;
    private static final int[] SIZES = sizes(1 << 16, 42);

    private final LiveRing ring = new LiveRing(LIVE);
    private int next;

    static int[] sizes(int n, long seed) {
        var random = new SplittableRandom(seed);
        int[] sizes = new int[n];
        for (int i = 0; i < n; i++) {
            int p = random.nextInt(100);
            sizes[i] = p < 70 ? random.nextInt(64, 513)
                    : p < 95 ? random.nextInt(4 << 10, (16 << 10) + 1)
                    : random.nextInt(64 << 10, (1 << 20) + 1);
        }
        return sizes;
    }

    private int size() {
        return SIZES[next++ & (SIZES.length - 1)];
    }

    @Setup(Level.Trial)
    public void checkThread() {
        Fairness.checkWorkerThread();
    }

    /** Per iteration, so the ring is empty before the arena's trial teardown checks that nothing leaked. */
    @TearDown(Level.Iteration)
    public void freeAll() throws Throwable {
        ring.freeAll();
    }

    @Benchmark
    public void mooringChecked(MooringState.Checked mooring) {
        ring.mooring(mooring.arena, size());
    }

    @Benchmark
    public void mooringUnchecked(MooringState.Unchecked mooring) {
        ring.mooring(mooring.arena, size());
    }

    @Benchmark
    public void nettyPooled(NettyState.Pooled netty) {
        ring.netty(netty.allocator, size());
    }

    @Benchmark
    public void nettyAdaptive(NettyState.Adaptive netty) {
        ring.netty(netty.allocator, size());
    }

    @Benchmark
    public void mallocFfm() throws Throwable {
        ring.malloc(Malloc.Libc.MALLOC, Malloc.Libc.FREE, size());
    }

    @Benchmark
    public void jemallocFfm() throws Throwable {
        ring.malloc(Malloc.Jemalloc.MALLOC, Malloc.Jemalloc.FREE, size());
    }
}
