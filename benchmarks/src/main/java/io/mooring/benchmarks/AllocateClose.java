package io.mooring.benchmarks;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.mooring.allocator.Block;
import io.netty.buffer.ByteBuf;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.infra.Blackhole;

/**
 * One allocate + write + free cycle per operation: the buffer is allocated, its first 8 bytes written (so the
 * memory is really touched and the write cannot be optimised away), and given back. Every allocator does
 * exactly that, on the same {@link FastThreadExecutor} threads, in one thread here and two in
 * {@link AllocateClose2Threads}. The shared-scope variants, which cost tens of microseconds, are in
 * {@link SharedScopeClose}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(jvmArgsAppend = {"-Djmh.executor=CUSTOM", "-Djmh.executor.class=io.mooring.benchmarks.FastThreadExecutor",
        "-Dio.netty.leakDetection.level=disabled"})
@Threads(1)
@State(Scope.Thread)
public class AllocateClose {
    @Param({"64", "512", "4096", "65536"})
    public int size;

    @Setup(Level.Trial)
    public void checkThread() {
        Fairness.checkWorkerThread();
    }

    /** {@code RdmaArena.allocate}: a block confined to this thread; its segment dies with {@code close()}. */
    @Benchmark
    public void mooringChecked(MooringState.Checked mooring) {
        try (Block block = mooring.arena.allocate(size)) {
            block.segment().set(JAVA_LONG, 0, size);
        }
    }

    /**
     * {@link #mooringChecked} with the block handed to a {@link Blackhole}, as when it is put in a work request or
     * a queue: the JIT must then really allocate the {@code Block} and its segment and scope, which it otherwise
     * keeps in registers.
     */
    @Benchmark
    public void mooringCheckedEscaping(MooringState.Checked mooring, Blackhole escape) {
        try (Block block = mooring.arena.allocate(size)) {
            block.segment().set(JAVA_LONG, 0, size);
            escape.consume(block);
        }
    }

    /** The same from an arena built with {@code checked(false)}: no scope per block. */
    @Benchmark
    public void mooringUnchecked(MooringState.Unchecked mooring) {
        try (Block block = mooring.arena.allocate(size)) {
            block.segment().set(JAVA_LONG, 0, size);
        }
    }

    /** Netty 4.2 {@code PooledByteBufAllocator.directBuffer} + {@code release}. */
    @Benchmark
    public void nettyPooled(NettyState.Pooled netty) {
        ByteBuf buf = netty.allocator.directBuffer(size);
        buf.setLongLE(0, size);
        buf.release();
    }

    /** Netty 4.2 {@code AdaptiveByteBufAllocator.directBuffer} + {@code release}. */
    @Benchmark
    public void nettyAdaptive(NettyState.Adaptive netty) {
        ByteBuf buf = netty.allocator.directBuffer(size);
        buf.setLongLE(0, size);
        buf.release();
    }

    /** A confined FFM arena per buffer: {@code allocate} (malloc + zeroing) and {@code close} (free). */
    @Benchmark
    public void ffmConfinedArena() {
        try (Arena arena = Arena.ofConfined()) {
            arena.allocate(size, 16).set(JAVA_LONG, 0, size);
        }
    }

    /** glibc {@code malloc}/{@code free} through FFM downcalls. */
    @Benchmark
    @SuppressWarnings("restricted") // a segment over the bytes malloc just returned
    public void mallocFfm() throws Throwable {
        MemorySegment memory = ((MemorySegment) Malloc.Libc.MALLOC.invokeExact((long) size)).reinterpret(size);
        if (memory.address() == 0) throw new OutOfMemoryError("malloc(" + size + ")");
        memory.set(JAVA_LONG, 0, size);
        Malloc.Libc.FREE.invokeExact(memory);
    }

    /** jemalloc's {@code malloc}/{@code free} (Debian's libjemalloc2, thread caches on) through FFM downcalls. */
    @Benchmark
    @SuppressWarnings("restricted") // a segment over the bytes malloc just returned
    public void jemallocFfm() throws Throwable {
        MemorySegment memory = ((MemorySegment) Malloc.Jemalloc.MALLOC.invokeExact((long) size)).reinterpret(size);
        if (memory.address() == 0) throw new OutOfMemoryError("jemalloc malloc(" + size + ")");
        memory.set(JAVA_LONG, 0, size);
        Malloc.Jemalloc.FREE.invokeExact(memory);
    }
}
