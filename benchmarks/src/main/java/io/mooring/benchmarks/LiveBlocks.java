package io.mooring.benchmarks;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * 1024 buffers live per thread, the oldest freed and a new one allocated and written per operation
 * ({@link LiveRing}): every buffer outlives its call, so nothing is kept in registers, and {@code -prof gc} shows
 * the garbage each buffer costs.
 */
@State(Scope.Thread)
public class LiveBlocks extends LiveRingBenchmark {
    @Param({"64", "4096"})
    public int size;

    /** The bytes behind {@link #ffmConfinedScope}'s ring: one slot per live buffer, allocated once. */
    private MemorySegment slots;

    public LiveBlocks() {
        super(1024);
    }

    @Setup
    public void allocateSlots() {
        slots = Arena.ofAuto().allocate((long) ring.live() * size, 16);
    }

    @Override
    int nextSize() {
        return size;
    }

    /**
     * What any checked buffer that outlives its call costs at least, whatever the allocator: a confined scope per
     * buffer and a segment in it, over memory allocated once — the JDK's floor under {@code mooringChecked}.
     */
    @Benchmark
    public void ffmConfinedScope() {
        ring.confinedScope(slots, size);
    }
}
