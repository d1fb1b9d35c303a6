package io.mooring.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.testing.NativeTools;
import io.netty.buffer.PoolArenaMetric;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.util.concurrent.FastThreadLocalThread;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.infra.Blackhole;
import org.openjdk.jmh.infra.Control;

/**
 * Every benchmark, at every parameter value and its thread count, driven the way JMH drives it (state setup,
 * a few operations on FastThreadLocalThreads, teardown) without measuring anything: so a broken setup, a leak
 * (the states' teardowns check) or a missing library shows up in the normal test run, not at benchmark time.
 */
class BenchmarkSetupTest {
    private static final List<Class<?>> FAMILIES = List.of(AllocateClose.class, AllocateClose2Threads.class,
            SharedScopeClose.class, SharedScopeClose2Threads.class, LiveBlocks.class, HandOff.class,
            NettyAllocators.class);
    private static final int OPERATIONS = 50;

    @TestFactory
    Stream<DynamicTest> everyBenchmarkSetsUpRunsAndTearsDownCleanly() throws NoSuchFieldException {
        List<DynamicTest> tests = new ArrayList<>();
        for (Class<?> family : FAMILIES) {
            for (Map.Entry<String, List<Method>> b : benchmarks(family).entrySet()) {
                for (String size : family.getField("size").getAnnotation(Param.class).value()) {
                    tests.add(DynamicTest.dynamicTest(family.getSimpleName() + "." + b.getKey() + " size=" + size,
                            () -> runLikeJmh(family, b.getValue(), Integer.parseInt(size))));
                }
            }
        }
        return tests.stream();
    }

    @Test
    void aBenchmarkOnAPlainThreadFailsWithTheHint() throws Exception {
        var e = onThread(false, () -> assertThrows(IllegalStateException.class, new AllocateClose()::checkThread));
        assertTrue(e.getMessage().contains("./mooring bench"), e.getMessage());
        onThread(true, () -> {
            new AllocateClose().checkThread();
            return null;
        });
    }

    @Test
    void teardownReportsABlockLeftOpen() {
        var mooring = new MooringState.Checked();
        mooring.open();
        Block leaked = mooring.arena.allocate(64);
        var e = assertThrows(IllegalStateException.class, mooring::close);
        assertTrue(e.getMessage().contains("leaked"), e.getMessage());
        leaked.close();
    }

    @Test
    void jemallocBenchmarkAllocatesFromJemallocAndFreesWhatItAllocates() throws Exception {
        NativeTools.requireLibrary("libjemalloc.so.2", "libjemalloc2");
        long[] delta = onThread(true, () -> {
            var benchmark = new AllocateClose();
            benchmark.size = 4096;
            jemalloc(benchmark, 1); // warms jemalloc's thread cache and counters
            long allocated = Malloc.Jemalloc.statistic("thread.allocated");
            long freed = Malloc.Jemalloc.statistic("thread.deallocated");
            jemalloc(benchmark, 10);
            return new long[] {Malloc.Jemalloc.statistic("thread.allocated") - allocated,
                    Malloc.Jemalloc.statistic("thread.deallocated") - freed};
        });
        assertEquals(10 * 4096, delta[0], "bytes jemalloc handed out");
        assertEquals(delta[0], delta[1], "bytes jemalloc took back");
    }

    private static void jemalloc(AllocateClose benchmark, int operations) throws Exception {
        try {
            for (int i = 0; i < operations; i++) benchmark.jemallocFfm();
        } catch (Exception | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    @Test
    void nettyPooledGetsEveryBufferBack() throws Exception {
        var netty = new NettyState.Pooled();
        netty.open();
        onThread(true, () -> {
            var benchmark = new AllocateClose();
            for (int size : new int[] {64, 512, 4096, 65536}) {
                benchmark.size = size;
                for (int i = 0; i < 1000; i++) benchmark.nettyPooled(netty);
            }
            return null;
        });
        // The thread's cache went back to the arenas when it ended; nothing else may still be allocated.
        var metric = ((PooledByteBufAllocator) netty.allocator).metric();
        assertEquals(0, metric.directArenas().stream().mapToLong(PoolArenaMetric::numActiveAllocations).sum(),
                metric::toString);
    }

    @Test
    void memoryOverheadReportsEveryAllocatorAndMooringRoundsLittle() throws Exception {
        NativeTools.requireLibrary("libjemalloc.so.2", "libjemalloc2");
        List<MemoryOverhead.Row> rows = MemoryOverhead.onFastThread(() -> MemoryOverhead.measure(2_000));
        assertEquals(10, rows.size(), rows::toString);
        for (MemoryOverhead.Row r : rows) assertTrue(r.ratio() >= 1.0, () -> "footprint below requested: " + r);
        MemoryOverhead.Row classes = rows.stream()
                .filter(r -> r.allocator().startsWith("mooring (activeBytes)")).findFirst().orElseThrow();
        assertTrue(classes.ratio() <= 1.25, () -> "size-class rounding above the 1.25 target: " + classes);
        var out = new java.io.ByteArrayOutputStream();
        MemoryOverhead.print(rows, 2_000, new java.io.PrintStream(out, true, java.nio.charset.StandardCharsets.UTF_8));
        assertTrue(out.toString(java.nio.charset.StandardCharsets.UTF_8).contains("jemalloc (stats.mapped)"));
    }

    // ---- a tiny JMH: states by scope, setup, operations, teardown ---------------------------------------------

    /** What JMH passes a benchmark that asks for one (its constructor insists on this sentence). */
    private static final Blackhole BLACKHOLE = new Blackhole(
            "Today's password is swordfish. I understand instantiating Blackholes directly is dangerous.");

    /**
     * Each benchmark by name, with the method each of its threads runs: {@code @Threads(n)} copies of one method, or
     * one per method of a {@code @Group} (each with one thread, as every group here has).
     */
    private static Map<String, List<Method>> benchmarks(Class<?> family) {
        Map<String, List<Method>> benchmarks = new TreeMap<>();
        Arrays.stream(family.getMethods()).filter(m -> m.isAnnotationPresent(Benchmark.class))
                .sorted(Comparator.comparing(Method::getName)).forEach(m -> {
                    Group group = m.getAnnotation(Group.class);
                    if (group != null) {
                        benchmarks.computeIfAbsent(group.value(), g -> new ArrayList<>()).add(m);
                    } else {
                        int threads = family.getAnnotation(Threads.class).value();
                        benchmarks.put(m.getName(), Collections.nCopies(threads, m));
                    }
                });
        return benchmarks;
    }

    private static void runLikeJmh(Class<?> family, List<Method> threads, int size) throws Throwable {
        if (threads.getFirst().getName().startsWith("jemalloc")) {
            NativeTools.requireLibrary("libjemalloc.so.2", "libjemalloc2");
        }
        // Scope.Benchmark and Scope.Group states (one group here) and the Control: one for all threads, set up
        // before and torn down after them.
        Map<Class<?>, Object> shared = new HashMap<>();
        onThread(true, () -> { // a group state's setup checks that it runs on a FastThreadLocalThread
            for (Method benchmark : threads) {
                for (Class<?> type : benchmark.getParameterTypes()) {
                    if (type == Control.class) {
                        shared.putIfAbsent(type, new Control());
                    } else if (type != Blackhole.class && scope(type) != Scope.Thread && !shared.containsKey(type)) {
                        try {
                            shared.put(type, setUp(type.getConstructor().newInstance()));
                        } catch (Exception | Error e) {
                            throw e;
                        } catch (Throwable t) {
                            throw new AssertionError(t);
                        }
                    }
                }
            }
            return null;
        });
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        Map<Thread, Boolean> started = new ConcurrentHashMap<>();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads.size(); t++) {
            Method benchmark = threads.get(t);
            Thread worker = new FastThreadLocalThread(() -> {
                try {
                    Object instance = setUp(sized(family.getConstructor().newInstance(), size));
                    Object[] args = new Object[benchmark.getParameterCount()];
                    for (int i = 0; i < args.length; i++) {
                        Class<?> type = benchmark.getParameterTypes()[i];
                        args[i] = shared.containsKey(type) ? shared.get(type)
                                : type == Blackhole.class ? BLACKHOLE
                                : setUp(type.getConstructor().newInstance());
                    }
                    for (int op = 0; op < OPERATIONS; op++) benchmark.invoke(instance, args);
                    for (Object arg : args) if (!shared.containsValue(arg)) tearDown(arg);
                    tearDown(instance);
                } catch (InvocationTargetException e) {
                    failures.add(e.getCause());
                } catch (Throwable e) {
                    failures.add(e);
                }
            }, "test-worker-" + t);
            started.put(worker, true);
            workers.add(worker);
            worker.start();
        }
        for (Thread w : workers) w.join();
        // The group's state first: the ring frees what it holds before the arena's teardown checks for leaks.
        List<Object> states = new ArrayList<>(shared.values());
        states.sort(Comparator.comparing((Object state) -> state.getClass().getAnnotation(State.class) == null
                || state.getClass().getAnnotation(State.class).value() != Scope.Group));
        for (Object state : states) tearDown(state);
        if (!failures.isEmpty()) throw failures.getFirst();
        assertFalse(started.isEmpty());
    }

    private static Object sized(Object benchmark, int size) throws ReflectiveOperationException {
        benchmark.getClass().getField("size").setInt(benchmark, size);
        return benchmark;
    }

    private static Scope scope(Class<?> type) {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            State s = c.getAnnotation(State.class);
            if (s != null) return s.value();
        }
        throw new AssertionError(type + " is not a JMH state");
    }

    private static Object setUp(Object state) throws Throwable {
        return invokeAll(state, Setup.class);
    }

    private static Object tearDown(Object state) throws Throwable {
        return invokeAll(state, TearDown.class);
    }

    private static Object invokeAll(Object state, Class<? extends java.lang.annotation.Annotation> marker)
            throws Throwable {
        for (Method m : state.getClass().getMethods()) {
            if (m.isAnnotationPresent(marker) && !Modifier.isStatic(m.getModifiers())) {
                try {
                    m.invoke(state);
                } catch (InvocationTargetException e) {
                    throw e.getCause();
                }
            }
        }
        return state;
    }

    private static <T> T onThread(boolean fast, Callable<T> work) throws Exception {
        if (fast) return MemoryOverhead.onFastThread(work);
        var result = new java.util.concurrent.atomic.AtomicReference<T>();
        var failure = new java.util.concurrent.atomic.AtomicReference<Exception>();
        Thread t = Thread.ofPlatform().start(() -> {
            try {
                result.set(work.call());
            } catch (Exception e) {
                failure.set(e);
            }
        });
        t.join();
        if (failure.get() != null) throw failure.get();
        return result.get();
    }
}
