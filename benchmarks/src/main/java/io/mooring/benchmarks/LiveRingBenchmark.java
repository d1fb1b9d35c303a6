package io.mooring.benchmarks;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * The benchmarks over a {@link LiveRing}, one per allocator: each operation frees the oldest buffer of the ring and
 * puts one of {@link #nextSize()} bytes in its place. Subclasses say how many buffers live and which sizes come.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(jvmArgsAppend = {"-Djmh.executor=CUSTOM", "-Djmh.executor.class=io.mooring.benchmarks.FastThreadExecutor",
        "-Dio.netty.leakDetection.level=disabled"})
@Threads(1)
public abstract class LiveRingBenchmark {
    final LiveRing ring;

    LiveRingBenchmark(int live) {
        ring = new LiveRing(live);
    }

    /** The size of the next buffer. */
    abstract int nextSize();

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
        ring.mooring(mooring.arena, nextSize());
    }

    @Benchmark
    public void mooringUnchecked(MooringState.Unchecked mooring) {
        ring.mooring(mooring.arena, nextSize());
    }

    @Benchmark
    public void nettyPooled(NettyState.Pooled netty) {
        ring.netty(netty.allocator, nextSize());
    }

    @Benchmark
    public void nettyAdaptive(NettyState.Adaptive netty) {
        ring.netty(netty.allocator, nextSize());
    }

    @Benchmark
    public void mallocFfm() throws Throwable {
        ring.malloc(Malloc.Libc.MALLOC, Malloc.Libc.FREE, nextSize());
    }

    @Benchmark
    public void jemallocFfm() throws Throwable {
        ring.malloc(Malloc.Jemalloc.MALLOC, Malloc.Jemalloc.FREE, nextSize());
    }
}
