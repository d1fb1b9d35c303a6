package io.mooring.benchmarks;

import io.mooring.netty.MooringByteBufAllocator;
import io.mooring.netty.ReleasePattern;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.infra.Control;

/**
 * Netty allocators through Netty's own API: {@code directBuffer(size)}, write 8 bytes, {@code release()} — Mooring's
 * {@link MooringByteBufAllocator} (buffers over arena blocks) against Netty 4.2's adaptive allocator at its best
 * ({@code new AdaptiveByteBufAllocator(true, true)}, magazines on every {@code FastThreadLocalThread}) and its pooled
 * one with thread caches. On one thread ({@code mooring}, {@code nettyAdaptive}, {@code nettyPooled}), and across
 * threads (the {@code ...HandOff} groups: a producer allocates and fills, a consumer reads and releases, through
 * {@link HandOff}'s ring; ops per buffer). {@code mooringOtherThreads...}: the allocator set for buffers released on
 * other threads ({@link ReleasePattern#OTHER_THREADS}).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(jvmArgsAppend = {"-Djmh.executor=CUSTOM", "-Djmh.executor.class=io.mooring.benchmarks.FastThreadExecutor",
        "-Dio.netty.leakDetection.level=disabled"})
@Threads(1)
@State(Scope.Thread)
public class NettyAllocators {
    @Param({"64", "4096"})
    public int size;

    /** A {@link MooringByteBufAllocator} over the benchmark's arena (default settings, soft provider). */
    @State(Scope.Benchmark)
    public static class Mooring {
        private final MooringState mooring = new MooringState();
        ByteBufAllocator allocator;

        /** The same for buffers mostly released on other threads: every block handed off as it is allocated. */
        public static class OtherThreads extends Mooring {
            @Override
            ReleasePattern releases() {
                return ReleasePattern.OTHER_THREADS;
            }
        }

        ReleasePattern releases() {
            return ReleasePattern.SAME_THREAD;
        }

        @Setup(Level.Trial)
        public void open() {
            mooring.open();
            allocator = new MooringByteBufAllocator(mooring.arena, ByteBufAllocator.DEFAULT, releases());
        }

        /** Fails the benchmark if a block is still out (see {@link MooringState#close()}). */
        @TearDown(Level.Trial)
        public void close() {
            mooring.close();
        }
    }

    @Setup(Level.Trial)
    public void checkThread() {
        Fairness.checkWorkerThread();
    }

    private void allocateRelease(ByteBufAllocator allocator) {
        ByteBuf buf = allocator.directBuffer(size);
        buf.setLongLE(0, size);
        buf.release();
    }

    @Benchmark
    public void mooring(Mooring mooring) {
        allocateRelease(mooring.allocator);
    }

    @Benchmark
    public void mooringOtherThreads(Mooring.OtherThreads mooring) {
        allocateRelease(mooring.allocator);
    }

    @Benchmark
    public void nettyAdaptive(NettyState.Adaptive netty) {
        allocateRelease(netty.allocator);
    }

    @Benchmark
    public void nettyPooled(NettyState.Pooled netty) {
        allocateRelease(netty.allocator);
    }

    // ---- across threads: each group's producer allocates, its consumer releases ----------------------------------

    @Benchmark
    @Group("mooringHandOff")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void mooringProduce(HandOff.Ring ring, Control control, Mooring mooring) {
        HandOff.produceNetty(ring, control, mooring.allocator, size);
    }

    @Benchmark
    @Group("mooringHandOff")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void mooringConsume(HandOff.Ring ring, Control control) {
        HandOff.consumeNetty(ring, control);
    }

    @Benchmark
    @Group("mooringOtherThreadsHandOff")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void mooringOtherThreadsProduce(HandOff.Ring ring, Control control, Mooring.OtherThreads mooring) {
        HandOff.produceNetty(ring, control, mooring.allocator, size);
    }

    @Benchmark
    @Group("mooringOtherThreadsHandOff")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void mooringOtherThreadsConsume(HandOff.Ring ring, Control control) {
        HandOff.consumeNetty(ring, control);
    }

    @Benchmark
    @Group("nettyAdaptiveHandOff")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void nettyAdaptiveProduce(HandOff.Ring ring, Control control, NettyState.Adaptive netty) {
        HandOff.produceNetty(ring, control, netty.allocator, size);
    }

    @Benchmark
    @Group("nettyAdaptiveHandOff")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void nettyAdaptiveConsume(HandOff.Ring ring, Control control) {
        HandOff.consumeNetty(ring, control);
    }

    @Benchmark
    @Group("nettyPooledHandOff")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void nettyPooledProduce(HandOff.Ring ring, Control control, NettyState.Pooled netty) {
        HandOff.produceNetty(ring, control, netty.allocator, size);
    }

    @Benchmark
    @Group("nettyPooledHandOff")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void nettyPooledConsume(HandOff.Ring ring, Control control) {
        HandOff.consumeNetty(ring, control);
    }
}
