package io.mooring.benchmarks;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.regcache.Registration;
import io.mooring.regcache.RegistrationCache;
import io.mooring.regcache.RegistrationCacheStats;
import io.mooring.verbs.RdmaDevices;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * A hit of the registration cache per operation: {@code acquire} of a buffer whose pages are registered, its
 * {@code lkey()} read (what a work request needs), {@code close()}. On one thread here and two in
 * {@link RegistrationHit2Threads}, each thread with its own buffer: in a region of its own ({@code region=own}),
 * or all in one region ({@code region=shared}, where the threads meet on that region's user count). The first
 * acquisition of each page is the only miss, made in setup.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(jvmArgsAppend = {"-Djmh.executor=CUSTOM", "-Djmh.executor.class=io.mooring.benchmarks.FastThreadExecutor"})
@Threads(1)
@State(Scope.Thread)
public class RegistrationHit {
    @Param({"own", "shared"})
    public String region;

    MemorySegment buffer;

    /** One cache over a PD of the soft provider, shared by the threads, and the memory they register. */
    @State(Scope.Benchmark)
    public static class Cache {
        static final int PAGES = 64;
        ResourceGraph graph;
        RegistrationCache cache;
        Arena memory;
        MemorySegment pages;
        long pageSize;
        final AtomicInteger threads = new AtomicInteger();

        @Setup(Level.Trial)
        public void open() {
            graph = ResourceGraph.builder().name("benchmark").build();
            cache = RegistrationCache.builder(RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain())
                    .name("benchmark").build();
            memory = Arena.ofShared();
            pageSize = 64 << 10; // at least a kernel page, so each thread's "own" buffer has pages of its own
            pages = memory.allocate(PAGES * pageSize, pageSize);
        }

        @TearDown(Level.Trial)
        public void close() {
            RegistrationCacheStats stats = cache.stats();
            cache.close();
            graph.close();
            memory.close();
            if (stats.inUseCount() != 0) throw new IllegalStateException("the benchmark left registrations: " + stats);
            if (graph.liveCount() != 0) throw new IllegalStateException("left behind:\n" + graph.dump());
        }
    }

    @Setup(Level.Trial)
    public void pick(Cache cache) {
        int thread = cache.threads.getAndIncrement();
        long offset = region.equals("own") ? thread * cache.pageSize : thread * 256L;
        buffer = cache.pages.asSlice(offset, 256);
        if (region.equals("shared")) {
            cache.cache.acquire(cache.pages.asSlice(0, cache.pageSize)).close(); // one region for every thread
        }
        cache.cache.acquire(buffer).close(); // the miss: only hits are measured
    }

    @Benchmark
    public int hit(Cache cache) {
        try (Registration reg = cache.cache.acquire(buffer)) {
            return reg.lkey();
        }
    }
}
