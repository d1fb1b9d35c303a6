package io.mooring.benchmarks;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * JMH's worker pool made of virtual threads ({@code -Djmh.executor=CUSTOM
 * -Djmh.executor.class=io.mooring.benchmarks.VirtualThreadExecutor}, which {@link AllocateCloseVirtual} sets): each
 * JMH worker is a virtual thread, as each request handler is in a server built on them. No peer has its thread
 * caches there except jemalloc, whose tcache follows the carrier; thread CPU time is not measured for virtual
 * threads (the JDK does not report it).
 */
public final class VirtualThreadExecutor extends ThreadPoolExecutor {
    /** The constructor JMH's {@code CUSTOM} executor type calls: thread count and a name prefix. */
    public VirtualThreadExecutor(int threads, String prefix) {
        super(threads, threads, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(),
                Thread.ofVirtual().name(prefix + "-jmh-virtual-worker-", 1).factory());
    }
}
