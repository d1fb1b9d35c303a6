package io.mooring.benchmarks;

import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * JMH's worker pool made of virtual threads ({@code -Djmh.executor=CUSTOM
 * -Djmh.executor.class=io.mooring.benchmarks.VirtualThreadExecutor}, which {@link AllocateCloseVirtual} sets): each
 * JMH worker is a virtual thread, as each request handler is in a server built on them. No peer has its thread
 * caches there except jemalloc, whose tcache follows the carrier. The JDK reports no CPU time for a virtual thread:
 * {@link CpuTimeProfiler} measures its carriers' instead ({@link #carriers()}).
 */
public final class VirtualThreadExecutor extends ThreadPoolExecutor {
    /**
     * The default scheduler's carrier threads alive now: what {@link CpuTimeProfiler} measures for virtual workers,
     * whose own CPU time the JDK does not report. It includes any other virtual thread's time on them (none runs in
     * the allocation benchmarks).
     */
    static List<Thread> carriers() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getClass().getName().equals("jdk.internal.misc.CarrierThread")).toList();
    }

    /** The constructor JMH's {@code CUSTOM} executor type calls: thread count and a name prefix. */
    public VirtualThreadExecutor(int threads, String prefix) {
        super(threads, threads, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(),
                Thread.ofVirtual().name(prefix + "-jmh-virtual-worker-", 1).factory());
    }
}
