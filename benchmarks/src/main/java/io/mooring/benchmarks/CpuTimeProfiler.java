package io.mooring.benchmarks;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * CPU time of the benchmark threads per operation ({@code -prof io.mooring.benchmarks.CpuTimeProfiler}, which
 * {@code ./mooring bench} adds): the sum over the {@link FastThreadExecutor} workers of their thread CPU time in
 * an iteration, divided by all the operations they ran in it; for virtual workers, their carriers' CPU time.
 *
 * <p>Why: on a machine whose cores are shared with other busy processes, a thread is descheduled for long
 * stretches and JMH's wall-clock score grows with the machine's load, not with the code. Thread CPU time leaves
 * those stretches out, so its ratios between benchmarks run minutes apart stay meaningful. It still includes
 * the cost of caches and TLBs cooled by the neighbours, a lock holder's descheduling seen as a waiter's spin, and
 * the once-per-trial setup and teardown (a few ms, on the first and last iteration).
 */
public final class CpuTimeProfiler implements InternalProfiler {
    static final String LABEL = "cpu.time";
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private final Map<Thread, Long> before = new HashMap<>();

    @Override
    public String getDescription() {
        return "thread CPU time of the JMH workers per operation";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmark, IterationParams iteration) {
        before.clear();
        for (Thread t : measured()) before.put(t, cpuNanos(t));
    }

    @Override
    @SuppressWarnings("rawtypes") // InternalProfiler's signature
    public Collection<? extends Result> afterIteration(BenchmarkParams benchmark, IterationParams iteration,
                                                       IterationResult result) {
        List<Thread> workers = measured();
        long ops = result.getMetadata().getAllOps();
        if (workers.isEmpty() || ops == 0) return List.of();
        long nanos = 0;
        for (Thread t : workers) nanos += cpuNanos(t) - before.getOrDefault(t, 0L); // new in this iteration: from 0
        double perOp = (double) nanos / ops / benchmark.getTimeUnit().toNanos(1);
        String unit = result.getScoreUnit();
        return List.of(new ScalarResult(LABEL, perOp, unit, AggregationPolicy.AVG));
    }

    /** The JMH workers, or for virtual workers (whose CPU time the JDK does not report) their carriers. */
    private static List<Thread> measured() {
        List<Thread> workers = FastThreadExecutor.workers();
        return workers.isEmpty() ? VirtualThreadExecutor.carriers() : workers;
    }

    private static long cpuNanos(Thread t) {
        long nanos = THREADS.getThreadCpuTime(t.threadId());
        return Math.max(nanos, 0);
    }
}
