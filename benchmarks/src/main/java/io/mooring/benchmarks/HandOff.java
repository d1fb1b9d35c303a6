package io.mooring.benchmarks;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
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
import org.openjdk.jmh.infra.Control;

/**
 * Producer and consumer: one thread allocates buffers and fills them, another reads and frees them — a network
 * layer's receive path, or a pipeline stage. Every peer runs the same protocol through a {@link HandOffRing}: the
 * producer fills a batch of {@value HandOffRing#BATCH} buffers and publishes it, the consumer reads each buffer back,
 * checks it and frees it. One invocation is one batch; operations are counted per buffer. Per group, the producer's
 * and the consumer's time per buffer; the group's score is their mean, and the CPU time is both threads' CPU over
 * both sides' buffers.
 *
 * <p>{@code mooringChecked} hands each block off ({@code Block.handOff()}) and the consumer takes hold by making its
 * segment, then closes it: a checked block read by the consumer, with no shared scope ({@code mooringUnchecked} hands
 * off too, so that its consumer frees at once). {@code mooringShared} is the alternative without hand-off
 * ({@code allocateShared}: a shared scope's close per block).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 3, jvmArgsAppend = {"-Djmh.executor=CUSTOM",
        "-Djmh.executor.class=io.mooring.benchmarks.FastThreadExecutor", "-Dio.netty.leakDetection.level=disabled"})
@State(Scope.Thread)
public class HandOff {
    @Param({"64", "4096"})
    public int size;

    /** The ring between the two threads of a group. */
    @State(Scope.Group)
    public static class Ring extends HandOffRing {
        @Setup(Level.Trial)
        public void checkThread() {
            Fairness.checkWorkerThread();
        }

        /** What the consumer did not take when the iteration ended: freed by whoever tears down. */
        @TearDown(Level.Iteration)
        public void drain() throws Throwable {
            freeUntaken();
        }
    }

    // ---- Mooring ----------------------------------------------------------------------------------------------

    private void produceMooring(Ring ring, Control control, RdmaArena arena, boolean shared) {
        long p = ring.awaitRoom(control);
        if (p < 0) return;
        for (int k = 0; k < HandOffRing.BATCH; k++) {
            Block b = shared ? arena.allocateShared(size, 16) : arena.allocate(size);
            b.segment().set(JAVA_LONG, 0, p + k);
            if (!shared) b.handOff();
            ring.objects[ring.slot(p + k)] = b;
        }
        ring.publish(p + HandOffRing.BATCH);
    }

    private static void consumeMooring(Ring ring, Control control) {
        long t = ring.awaitBatch(control);
        if (t < 0) return;
        for (int k = 0; k < HandOffRing.BATCH; k++) {
            Block b = (Block) ring.objects[ring.slot(t + k)];
            HandOffRing.check(b.segment().get(JAVA_LONG, 0), t + k);
            b.close();
        }
        ring.take(t + HandOffRing.BATCH);
    }

    @Benchmark
    @Group("mooringChecked")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void mooringCheckedProduce(Ring ring, Control control, MooringState.Checked mooring) {
        produceMooring(ring, control, mooring.arena, false);
    }

    @Benchmark
    @Group("mooringChecked")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void mooringCheckedConsume(Ring ring, Control control) {
        consumeMooring(ring, control);
    }

    @Benchmark
    @Group("mooringUnchecked")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void mooringUncheckedProduce(Ring ring, Control control, MooringState.Unchecked mooring) {
        produceMooring(ring, control, mooring.arena, false);
    }

    @Benchmark
    @Group("mooringUnchecked")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void mooringUncheckedConsume(Ring ring, Control control) {
        consumeMooring(ring, control);
    }

    @Benchmark
    @Group("mooringShared")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void mooringSharedProduce(Ring ring, Control control, MooringState.Checked mooring) {
        produceMooring(ring, control, mooring.arena, true);
    }

    @Benchmark
    @Group("mooringShared")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void mooringSharedConsume(Ring ring, Control control) {
        consumeMooring(ring, control);
    }

    // ---- Netty --------------------------------------------------------------------------------------------------

    /** Fills a batch of Netty buffers of {@code size} bytes (also {@link NettyAllocators}'s producer). */
    static void produceNetty(Ring ring, Control control, ByteBufAllocator allocator, int size) {
        long p = ring.awaitRoom(control);
        if (p < 0) return;
        for (int k = 0; k < HandOffRing.BATCH; k++) {
            ByteBuf buf = allocator.directBuffer(size);
            buf.setLongLE(0, p + k);
            ring.objects[ring.slot(p + k)] = buf;
        }
        ring.publish(p + HandOffRing.BATCH);
    }

    static void consumeNetty(Ring ring, Control control) {
        long t = ring.awaitBatch(control);
        if (t < 0) return;
        for (int k = 0; k < HandOffRing.BATCH; k++) {
            ByteBuf buf = (ByteBuf) ring.objects[ring.slot(t + k)];
            HandOffRing.check(buf.getLongLE(0), t + k);
            buf.release();
        }
        ring.take(t + HandOffRing.BATCH);
    }

    @Benchmark
    @Group("nettyAdaptive")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void nettyAdaptiveProduce(Ring ring, Control control, NettyState.Adaptive netty) {
        produceNetty(ring, control, netty.allocator, size);
    }

    @Benchmark
    @Group("nettyAdaptive")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void nettyAdaptiveConsume(Ring ring, Control control) {
        consumeNetty(ring, control);
    }

    @Benchmark
    @Group("nettyPooled")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void nettyPooledProduce(Ring ring, Control control, NettyState.Pooled netty) {
        produceNetty(ring, control, netty.allocator, size);
    }

    @Benchmark
    @Group("nettyPooled")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void nettyPooledConsume(Ring ring, Control control) {
        consumeNetty(ring, control);
    }

    // ---- C allocators through FFM (handles passed from static finals, so the JIT sees constants) ----------------

    @SuppressWarnings("restricted") // a segment over the bytes malloc just returned
    private void produceNative(Ring ring, Control control, MethodHandle malloc, MethodHandle free) throws Throwable {
        ring.nativeFree = free;
        long p = ring.awaitRoom(control);
        if (p < 0) return;
        for (int k = 0; k < HandOffRing.BATCH; k++) {
            MemorySegment m = ((MemorySegment) malloc.invokeExact((long) size)).reinterpret(size);
            if (m.address() == 0) throw new OutOfMemoryError("malloc(" + size + ")");
            m.set(JAVA_LONG, 0, p + k);
            ring.addresses[ring.slot(p + k)] = m.address();
        }
        ring.publish(p + HandOffRing.BATCH);
    }

    @SuppressWarnings("restricted") // the bytes the producer's malloc returned
    private void consumeNative(Ring ring, Control control, MethodHandle free) throws Throwable {
        long t = ring.awaitBatch(control);
        if (t < 0) return;
        for (int k = 0; k < HandOffRing.BATCH; k++) {
            MemorySegment m = MemorySegment.ofAddress(ring.addresses[ring.slot(t + k)]).reinterpret(size);
            HandOffRing.check(m.get(JAVA_LONG, 0), t + k);
            free.invokeExact(m);
        }
        ring.take(t + HandOffRing.BATCH);
    }

    @Benchmark
    @Group("jemallocFfm")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void jemallocFfmProduce(Ring ring, Control control) throws Throwable {
        produceNative(ring, control, Malloc.Jemalloc.MALLOC, Malloc.Jemalloc.FREE);
    }

    @Benchmark
    @Group("jemallocFfm")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void jemallocFfmConsume(Ring ring, Control control) throws Throwable {
        consumeNative(ring, control, Malloc.Jemalloc.FREE);
    }

    @Benchmark
    @Group("mallocFfm")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void mallocFfmProduce(Ring ring, Control control) throws Throwable {
        produceNative(ring, control, Malloc.Libc.MALLOC, Malloc.Libc.FREE);
    }

    @Benchmark
    @Group("mallocFfm")
    @OperationsPerInvocation(HandOffRing.BATCH)
    public void mallocFfmConsume(Ring ring, Control control) throws Throwable {
        consumeNative(ring, control, Malloc.Libc.FREE);
    }
}
