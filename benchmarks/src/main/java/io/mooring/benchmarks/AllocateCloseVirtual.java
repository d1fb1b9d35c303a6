package io.mooring.benchmarks;

import org.openjdk.jmh.annotations.Fork;

/**
 * {@link AllocateClose} with every JMH worker a virtual thread ({@link VirtualThreadExecutor}): what a server whose
 * handlers are virtual threads gets from each allocator. Compare with {@link AllocateClose} in the same run.
 */
@Fork(jvmArgsAppend = {"-Djmh.executor=CUSTOM", "-Djmh.executor.class=io.mooring.benchmarks.VirtualThreadExecutor",
        "-Dio.netty.leakDetection.level=disabled"})
public class AllocateCloseVirtual extends AllocateClose {
    @Override
    public void checkThread() {
        if (!Thread.currentThread().isVirtual()) {
            throw new IllegalStateException("benchmark thread '" + Thread.currentThread().getName() + "' is not "
                    + "virtual: give the benchmark JVM -Djmh.executor=CUSTOM "
                    + "-Djmh.executor.class=io.mooring.benchmarks.VirtualThreadExecutor");
        }
    }
}
