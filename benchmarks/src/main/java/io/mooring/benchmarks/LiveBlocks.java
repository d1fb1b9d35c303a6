package io.mooring.benchmarks;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * 1024 buffers live per thread, the oldest freed and a new one allocated and written per operation
 * ({@link LiveRing}): every buffer outlives its call, so nothing is kept in registers, and {@code -prof gc} shows
 * the garbage each buffer costs.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(jvmArgsAppend = {"-Djmh.executor=CUSTOM", "-Djmh.executor.class=io.mooring.benchmarks.FastThreadExecutor",
        "-Dio.netty.leakDetection.level=disabled"})
@Threads(1)
@State(Scope.Thread)
public class LiveBlocks {
    static final int LIVE = 1024;

    @Param({"64", "4096"})
    public int size;

    private final LiveRing ring = new LiveRing(LIVE);

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
        ring.mooring(mooring.arena, size);
    }

    @Benchmark
    public void mooringUnchecked(MooringState.Unchecked mooring) {
        ring.mooring(mooring.arena, size);
    }

    @Benchmark
    public void nettyPooled(NettyState.Pooled netty) {
        ring.netty(netty.allocator, size);
    }

    @Benchmark
    public void nettyAdaptive(NettyState.Adaptive netty) {
        ring.netty(netty.allocator, size);
    }

    @Benchmark
    public void mallocFfm() throws Throwable {
        ring.malloc(Malloc.Libc.MALLOC, Malloc.Libc.FREE, size);
    }

    @Benchmark
    public void jemallocFfm() throws Throwable {
        ring.malloc(Malloc.Jemalloc.MALLOC, Malloc.Jemalloc.FREE, size);
    }
}
