package io.mooring.benchmarks;

import io.netty.util.concurrent.FastThreadLocalThread;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * JMH's worker pool, made of Netty {@link FastThreadLocalThread}s, so every allocator in a run is measured on
 * the same kind of thread and Netty gets its thread caches, recyclers and adaptive magazines (on plain threads
 * Netty 4.2 is 1.4–2.4× slower here).
 *
 * <p>JMH 1.37 builds it by reflection when the forked JVM has {@code -Djmh.executor=CUSTOM
 * -Djmh.executor.class=io.mooring.benchmarks.FastThreadExecutor}: a fixed pool, like JMH's default
 * {@code FIXED_TPE}, so the same threads run every iteration of a benchmark. {@code ./mooring bench} sets both
 * properties; {@link Fairness#check()} fails a benchmark that runs on any other thread.
 */
public final class FastThreadExecutor extends ThreadPoolExecutor {
    private static final Set<Thread> WORKERS = ConcurrentHashMap.newKeySet();

    /** The constructor JMH's {@code CUSTOM} executor type calls: thread count and a name prefix. */
    public FastThreadExecutor(int threads, String prefix) {
        super(threads, threads, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), new Factory(prefix));
    }

    /** The live worker threads of every such pool in this JVM (what {@link CpuTimeProfiler} reads). */
    static List<Thread> workers() {
        WORKERS.removeIf(t -> t.getState() == Thread.State.TERMINATED);
        return List.copyOf(WORKERS);
    }

    private static final class Factory implements java.util.concurrent.ThreadFactory {
        private final String prefix;
        private final AtomicInteger next = new AtomicInteger();

        Factory(String prefix) {
            this.prefix = prefix;
        }

        @Override
        public Thread newThread(Runnable task) {
            var t = new FastThreadLocalThread(task, prefix + "-jmh-worker-" + next.incrementAndGet());
            t.setDaemon(true);
            WORKERS.add(t);
            return t;
        }
    }
}
