package io.mooring.benchmarks;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
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
 * layer's receive path, or a pipeline stage. They meet in a single-producer single-consumer ring, in batches of
 * {@value #BATCH} so that the ring's cost stays small beside the allocator's. Per group, the producer's and the
 * consumer's time per buffer; the group's score is their mean.
 *
 * <p>{@code mooringChecked} hands each block off ({@code Block.handOff()}) and the consumer takes hold by making its
 * segment, then closes it: a checked block read by the consumer, with no shared scope ({@code mooringUnchecked} hands
 * off too, so that its consumer frees at once). {@code mooringShared} is the alternative without hand-off
 * ({@code allocateShared}: a shared scope's close per block).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(jvmArgsAppend = {"-Djmh.executor=CUSTOM", "-Djmh.executor.class=io.mooring.benchmarks.FastThreadExecutor",
        "-Dio.netty.leakDetection.level=disabled"})
@State(Scope.Thread)
public class HandOff {
    static final int BATCH = 64;

    @Param({"64", "4096"})
    public int size;

    /** The ring between the two threads of a group. */
    @State(Scope.Group)
    public static class Ring {
        private static final int CAPACITY = 8192; // buffers: room enough that the sides rarely wait for each other
        private final Object[] slots = new Object[CAPACITY];
        private final long[] addresses = new long[CAPACITY];
        private final AtomicLong published = new AtomicLong(); // written by the producer
        private final AtomicLong taken = new AtomicLong();     // written by the consumer
        private MethodHandle nativeFree;

        @Setup(Level.Trial)
        public void checkThread() {
            Fairness.checkWorkerThread();
        }

        /** Waits for room for a batch; false if the iteration ended meanwhile. */
        boolean awaitRoom(Control control) {
            long p = published.get();
            while (p - taken.get() > CAPACITY - BATCH) {
                if (control.stopMeasurement) return false;
                Thread.yield(); // not a spin: on a machine shared with others, a spinner starves the other side
            }
            return true;
        }

        /** Waits for a batch; false if the iteration ended meanwhile. */
        boolean awaitBatch(Control control) {
            long t = taken.get();
            while (published.get() - t < BATCH) {
                if (control.stopMeasurement) return false;
                Thread.yield();
            }
            return true;
        }

        int slot(long n) {
            return (int) (n & (CAPACITY - 1));
        }

        /** What the consumer did not take when the iteration ended: freed by whoever tears down. */
        @TearDown(Level.Iteration)
        public void drain() throws Throwable {
            for (long n = taken.get(); n < published.get(); n++) {
                int i = slot(n);
                if (slots[i] instanceof Block b) b.close();
                else if (slots[i] instanceof ByteBuf buf) buf.release();
                else if (addresses[i] != 0) nativeFree.invokeExact(MemorySegment.ofAddress(addresses[i]));
                slots[i] = null;
                addresses[i] = 0;
            }
            taken.set(published.get());
        }
    }

    // ---- Mooring ----------------------------------------------------------------------------------------------

    private void produceMooring(Ring ring, Control control, RdmaArena arena, boolean shared, boolean handOff) {
        if (!ring.awaitRoom(control)) return;
        long p = ring.published.get();
        for (int k = 0; k < BATCH; k++) {
            Block b = shared ? arena.allocateShared(size, 16) : arena.allocate(size);
            b.segment().set(JAVA_LONG, 0, p + k);
            if (handOff) b.handOff();
            ring.slots[ring.slot(p + k)] = b;
        }
        ring.published.lazySet(p + BATCH);
    }

    private static void consumeMooring(Ring ring, Control control) {
        if (!ring.awaitBatch(control)) return;
        long t = ring.taken.get();
        for (int k = 0; k < BATCH; k++) {
            int i = ring.slot(t + k);
            Block b = (Block) ring.slots[i];
            ring.slots[i] = null;
            if (b.segment().get(JAVA_LONG, 0) != t + k) throw new AssertionError("read another buffer");
            b.close();
        }
        ring.taken.lazySet(t + BATCH);
    }

    @Benchmark
    @Group("mooringChecked")
    @GroupThreads(1)
    @OperationsPerInvocation(BATCH)
    public void mooringCheckedProduce(Ring ring, Control control, MooringState.Checked mooring) {
        produceMooring(ring, control, mooring.arena, false, true);
    }

    @Benchmark
    @Group("mooringChecked")
    @GroupThreads(1)
    @OperationsPerInvocation(BATCH)
    public void mooringCheckedConsume(Ring ring, Control control) {
        consumeMooring(ring, control);
    }

    @Benchmark
    @Group("mooringUnchecked")
    @GroupThreads(1)
    @OperationsPerInvocation(BATCH)
    public void mooringUncheckedProduce(Ring ring, Control control, MooringState.Unchecked mooring) {
        produceMooring(ring, control, mooring.arena, false, true);
    }

    @Benchmark
    @Group("mooringUnchecked")
    @GroupThreads(1)
    @OperationsPerInvocation(BATCH)
    public void mooringUncheckedConsume(Ring ring, Control control) {
        consumeMooring(ring, control);
    }

    @Benchmark
    @Group("mooringShared")
    @GroupThreads(1)
    @OperationsPerInvocation(BATCH)
    public void mooringSharedProduce(Ring ring, Control control, MooringState.Checked mooring) {
        produceMooring(ring, control, mooring.arena, true, false);
    }

    @Benchmark
    @Group("mooringShared")
    @GroupThreads(1)
    @OperationsPerInvocation(BATCH)
    public void mooringSharedConsume(Ring ring, Control control) {
        consumeMooring(ring, control);
    }

    // ---- Netty --------------------------------------------------------------------------------------------------

    private void produceNetty(Ring ring, Control control, ByteBufAllocator allocator) {
        if (!ring.awaitRoom(control)) return;
        long p = ring.published.get();
        for (int k = 0; k < BATCH; k++) {
            ByteBuf buf = allocator.directBuffer(size);
            buf.setLongLE(0, p + k);
            ring.slots[ring.slot(p + k)] = buf;
        }
        ring.published.lazySet(p + BATCH);
    }

    private static void consumeNetty(Ring ring, Control control) {
        if (!ring.awaitBatch(control)) return;
        long t = ring.taken.get();
        for (int k = 0; k < BATCH; k++) {
            int i = ring.slot(t + k);
            ByteBuf buf = (ByteBuf) ring.slots[i];
            ring.slots[i] = null;
            if (buf.getLongLE(0) != t + k) throw new AssertionError("read another buffer");
            buf.release();
        }
        ring.taken.lazySet(t + BATCH);
    }

    @Benchmark
    @Group("nettyAdaptive")
    @GroupThreads(1)
    @OperationsPerInvocation(BATCH)
    public void nettyAdaptiveProduce(Ring ring, Control control, NettyState.Adaptive netty) {
        produceNetty(ring, control, netty.allocator);
    }

    @Benchmark
    @Group("nettyAdaptive")
    @GroupThreads(1)
    @OperationsPerInvocation(BATCH)
    public void nettyAdaptiveConsume(Ring ring, Control control) {
        consumeNetty(ring, control);
    }

    // ---- jemalloc -----------------------------------------------------------------------------------------------

    @Benchmark
    @Group("jemallocFfm")
    @GroupThreads(1)
    @OperationsPerInvocation(BATCH)
    @SuppressWarnings("restricted") // a segment over the bytes malloc just returned
    public void jemallocFfmProduce(Ring ring, Control control) throws Throwable {
        ring.nativeFree = Malloc.Jemalloc.FREE;
        if (!ring.awaitRoom(control)) return;
        long p = ring.published.get();
        for (int k = 0; k < BATCH; k++) {
            MemorySegment m = ((MemorySegment) Malloc.Jemalloc.MALLOC.invokeExact((long) size)).reinterpret(size);
            if (m.address() == 0) throw new OutOfMemoryError("jemalloc malloc(" + size + ")");
            m.set(JAVA_LONG, 0, p + k);
            ring.addresses[ring.slot(p + k)] = m.address();
        }
        ring.published.lazySet(p + BATCH);
    }

    @Benchmark
    @Group("jemallocFfm")
    @GroupThreads(1)
    @OperationsPerInvocation(BATCH)
    @SuppressWarnings("restricted") // the bytes the producer's malloc returned
    public void jemallocFfmConsume(Ring ring, Control control) throws Throwable {
        if (!ring.awaitBatch(control)) return;
        long t = ring.taken.get();
        for (int k = 0; k < BATCH; k++) {
            int i = ring.slot(t + k);
            MemorySegment m = MemorySegment.ofAddress(ring.addresses[i]).reinterpret(size);
            ring.addresses[i] = 0;
            if (m.get(JAVA_LONG, 0) != t + k) throw new AssertionError("read another buffer");
            Malloc.Jemalloc.FREE.invokeExact(m);
        }
        ring.taken.lazySet(t + BATCH);
    }
}
