package io.mooring.benchmarks;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.mooring.allocator.Block;
import java.lang.foreign.Arena;
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

/**
 * Allocate + write + close where the memory may be used from any thread until it is closed: a shared FFM
 * scope per buffer, whose close is a handshake with every thread of the JVM. Measured in microseconds, at 64 B
 * only by default (the size hardly matters; {@code -p size=4096} to check), to show why Mooring's checked
 * default is a confined scope and the shared one is opt-in.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(jvmArgsAppend = {"-Djmh.executor=CUSTOM", "-Djmh.executor.class=io.mooring.benchmarks.FastThreadExecutor",
        "-Dio.netty.leakDetection.level=disabled"})
@Threads(1)
@State(Scope.Thread)
public class SharedScopeClose {
    @Param({"64"})
    public int size;

    @Setup(Level.Trial)
    public void checkThread() {
        Fairness.checkWorkerThread();
    }

    /** {@code RdmaArena.allocateShared}: a checked block usable from every thread. */
    @Benchmark
    public void mooringShared(MooringState.Checked mooring) {
        try (Block block = mooring.arena.allocateShared(size, 16)) {
            block.segment().set(JAVA_LONG, 0, size);
        }
    }

    /** A shared FFM arena per buffer. */
    @Benchmark
    public void ffmSharedArena() {
        try (Arena arena = Arena.ofShared()) {
            arena.allocate(size, 16).set(JAVA_LONG, 0, size);
        }
    }
}
