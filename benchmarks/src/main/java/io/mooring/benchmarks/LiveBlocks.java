package io.mooring.benchmarks;

import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
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

    public LiveBlocks() {
        super(1024);
    }

    @Override
    int nextSize() {
        return size;
    }
}
