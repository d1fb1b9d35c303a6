package io.mooring.benchmarks;

import io.netty.util.concurrent.FastThreadLocalThread;
import io.netty.util.internal.PlatformDependent;

/**
 * The conditions every run must meet for the comparison to be fair, checked in each benchmark's setup so a
 * run that misses one fails instead of printing misleading numbers.
 */
final class Fairness {
    /** The JVM options {@code ./mooring bench} and every {@code @Fork} give the benchmark JVMs. */
    static final String EXECUTOR_OPTIONS = "-Djmh.executor=CUSTOM -Djmh.executor.class="
            + "io.mooring.benchmarks.FastThreadExecutor";

    private Fairness() {}

    /**
     * Every allocator runs on Netty's own kind of thread ({@link FastThreadExecutor}): the one on which Netty
     * keeps thread caches and adaptive magazines.
     */
    static void checkWorkerThread() {
        if (!FastThreadLocalThread.currentThreadWillCleanupFastThreadLocals()) {
            throw new IllegalStateException("benchmark thread '" + Thread.currentThread().getName() + "' is not a "
                    + "Netty FastThreadLocalThread, so Netty would run without its thread caches: run through "
                    + "./mooring bench, or give the benchmark JVM " + EXECUTOR_OPTIONS);
        }
    }

    /** Netty on JDK 25 is at its best with {@code sun.misc.Unsafe} (unsafe direct buffers, no cleaners). */
    static void checkNettyUnsafe() {
        if (!PlatformDependent.hasUnsafe()) {
            throw new IllegalStateException("Netty runs without sun.misc.Unsafe ("
                    + PlatformDependent.getUnsafeUnavailabilityCause() + "): give the benchmark JVM "
                    + "--sun-misc-unsafe-memory-access=allow (./mooring bench does)");
        }
    }
}
