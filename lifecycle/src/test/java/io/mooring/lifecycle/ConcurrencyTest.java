package io.mooring.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.RepeatedTest;

class ConcurrencyTest {
    private static final int THREADS = 4;

    @RepeatedTest(20)
    void pinsRacingACloseNeverSeeTheDestroyAndTheDestroyRunsOnce() throws Exception {
        var graph = ResourceGraph.create();
        var held = new AtomicInteger(); // pins granted and not yet released, as seen by the pinners
        var destroys = new AtomicInteger();
        var destroyedWhilePinned = new AtomicInteger();
        Resource mr = graph.create("mr", "", () -> {
            destroys.incrementAndGet();
            if (held.get() != 0) destroyedWhilePinned.incrementAndGet();
        });
        var barrier = new CyclicBarrier(THREADS + 1);
        try (ExecutorService pool = Executors.newFixedThreadPool(THREADS)) {
            List<Future<Integer>> pinners = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                pinners.add(pool.submit(() -> {
                    barrier.await();
                    int granted = 0;
                    for (int i = 0; i < 20_000; i++) {
                        Pin p;
                        try {
                            p = mr.pin();
                        } catch (ResourceClosedException closed) {
                            break;
                        }
                        held.incrementAndGet();
                        granted++;
                        held.decrementAndGet();
                        p.close();
                    }
                    return granted;
                }));
            }
            barrier.await();
            Thread.sleep(1);
            mr.close();
            for (Future<Integer> f : pinners) f.get();
        }
        assertEquals(1, destroys.get());
        assertEquals(0, destroyedWhilePinned.get());
        assertEquals(0, graph.liveCount());
    }

    @RepeatedTest(20)
    void childrenCreatedRacingAParentCloseAreEitherAttachedOrUndone() throws Exception {
        var graph = ResourceGraph.create();
        var order = new ConcurrentLinkedQueue<String>();
        Resource pd = graph.create("pd", "", () -> order.add("pd"));
        var undone = new AtomicInteger();
        var attached = new ConcurrentLinkedQueue<Resource>();
        var barrier = new CyclicBarrier(THREADS + 1);
        try (ExecutorService pool = Executors.newFixedThreadPool(THREADS)) {
            List<Future<?>> creators = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                creators.add(pool.submit(() -> {
                    barrier.await();
                    for (int i = 0; ; i++) {
                        var attachedFlag = new boolean[1];
                        try (var _ = pd.pin()) {
                            attached.add(pd.createChild("mr", "", () -> {
                                order.add("mr");
                                if (!attachedFlag[0]) undone.incrementAndGet();
                            }));
                            attachedFlag[0] = true;
                        } catch (ResourceClosedException closed) {
                            return i;
                        }
                    }
                }));
            }
            barrier.await();
            // Close while creators are mid-flight, and only once a child exists: what the assertions are about.
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (attached.isEmpty()) {
                if (System.nanoTime() > deadline) throw new AssertionError("no creator attached a child in 10 s");
                Thread.onSpinWait();
            }
            pd.close();
            for (Future<?> f : creators) f.get();
        }
        assertTrue(order.stream().noneMatch("pd"::equals), "children are alive, so the PD is not destroyed");
        attached.forEach(Resource::close);
        List<String> all = List.copyOf(order);
        assertEquals("pd", all.getLast());
        assertEquals(attached.size() + undone.get() + 1, all.size(), "every native object destroyed exactly once");
        assertEquals(0, graph.liveCount());
    }

    @RepeatedTest(10)
    void overlappingCloseTreesAndClosesDestroyEachResourceOnceInOrder() throws Exception {
        var graph = ResourceGraph.create();
        var destroyed = new ConcurrentLinkedQueue<Long>();
        var violations = new ConcurrentLinkedQueue<String>();
        List<Resource> all = new ArrayList<>();
        Resource ctx = graph.create("ctx", "", () -> {});
        all.add(ctx);
        var random = new java.util.Random(42);
        for (int i = 0; i < 200; i++) {
            Resource a = all.get(random.nextInt(all.size()));
            Resource b = all.get(random.nextInt(all.size()));
            long[] self = new long[1];
            List<Resource> parents = List.of(a, b);
            Resource r = graph.create("n", "", () -> {
                // Every child must already be gone: check against what was destroyed before us.
                for (Resource p : parents) if (destroyed.contains(p.id())) violations.add(p.id() + " before child");
                destroyed.add(self[0]);
            }, a, b);
            self[0] = r.id();
            all.add(r);
        }
        var barrier = new CyclicBarrier(THREADS);
        try (ExecutorService pool = Executors.newFixedThreadPool(THREADS)) {
            List<Future<?>> closers = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                int seed = t;
                closers.add(pool.submit(() -> {
                    barrier.await();
                    var rnd = new java.util.Random(seed);
                    for (int i = 0; i < 100; i++) {
                        Resource r = all.get(rnd.nextInt(all.size()));
                        if (rnd.nextBoolean()) r.closeTree(); else r.close();
                    }
                    return null;
                }));
            }
            for (Future<?> f : closers) f.get();
        }
        ctx.closeTree();
        assertEquals(List.of(), List.copyOf(violations));
        assertEquals(all.size() - 1, destroyed.size());
        assertEquals(destroyed.size(), destroyed.stream().distinct().count());
        assertEquals(0, graph.liveCount());
    }
}
