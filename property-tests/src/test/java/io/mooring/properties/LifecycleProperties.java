package io.mooring.properties;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import io.mooring.lifecycle.ClosePolicy;
import io.mooring.lifecycle.LeakDetection;
import io.mooring.lifecycle.Pin;
import io.mooring.lifecycle.Resource;
import io.mooring.lifecycle.ResourceBusyException;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceGraph;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * Random programs of create / pin / unpin / close / closeTree over 1–4 threads, run against the real graph.
 *
 * <p>Every destroy action checks the rules at the moment it runs (it runs once; none of its parents is
 * destroyed yet; nobody holds a pin on it). On one thread the run is also compared step by step with a
 * sequential model that says exactly which resources must be destroyed. At the end every handle is closed and
 * every resource must have been destroyed exactly once, and every closed handle must refuse use.
 */
class LifecycleProperties {

    enum Op { ROOT, CHILD, PIN, UNPIN, CLOSE, CLOSE_TREE }

    /** One step of one thread; {@code a} and {@code b} pick targets modulo what exists when it runs. */
    record Step(int thread, Op op, int a, int b) {}

    private static Gen<Step> steps() {
        return Generate.range(0, 3).zip(Generate.enumValues(Op.class), Generate.range(0, 99), Generate.range(-1, 99),
                Step::new);
    }

    @Test
    void destroyOrderHoldsForRandomProgramsOnOneToFourThreads() {
        qt().withExamples(300).withShrinkCycles(200)
                .forAll(integers().between(1, 4), Generate.enumValues(ClosePolicy.class),
                        lists().of(steps()).ofSizeBetween(1, 60))
                .checkAssert((threads, policy, program) -> new Run(policy).execute(threads, program));
    }

    /** What the test knows about one resource, shared by its destroy action and the threads. */
    static final class Entry {
        final int token;
        final List<Entry> parents;
        final AtomicInteger heldPins = new AtomicInteger(); // incremented after pin(), decremented before close
        final AtomicInteger destroys = new AtomicInteger();
        volatile Resource handle; // null if creation failed
        volatile boolean closeReturned;
        // Set while graph.create runs: the graph runs the action on this thread only to undo a failed creation.
        volatile Thread creator;
        // Sequential model (checked on one thread only).
        boolean modelClosed;
        final List<Entry> modelChildren = new CopyOnWriteArrayList<>();

        Entry(int token, List<Entry> parents) {
            this.token = token;
            this.parents = parents;
        }

        boolean modelDestroyed() {
            return handle == null || (modelClosed && heldPins.get() == 0
                    && modelChildren.stream().allMatch(Entry::modelDestroyed));
        }
    }

    record Held(Entry entry, Pin pin) {}

    static final class Run {
        private final ResourceGraph graph;
        private final ClosePolicy policy;
        private final List<Entry> entries = new CopyOnWriteArrayList<>();
        private final ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
        private final AtomicInteger tokens = new AtomicInteger();

        Run(ClosePolicy policy) {
            this.policy = policy;
            this.graph = ResourceGraph.builder().policy(policy).leakDetection(LeakDetection.OFF).build();
        }

        void execute(int threads, List<Step> program) {
            if (threads == 1) {
                List<Held> pins = new ArrayList<>();
                for (Step s : program) {
                    apply(s, pins);
                    checkAgainstModel(s);
                }
                finish(List.of(pins));
            } else {
                finish(runConcurrently(threads, program));
            }
        }

        private List<List<Held>> runConcurrently(int threads, List<Step> program) {
            List<List<Held>> pins = new ArrayList<>();
            for (int t = 0; t < threads; t++) pins.add(new ArrayList<>());
            Workers.runTogether(threads, me -> {
                for (Step s : program) if (s.thread() % threads == me) apply(s, pins.get(me));
            });
            return pins;
        }

        private void apply(Step s, List<Held> pins) {
            switch (s.op()) {
                case ROOT -> create(List.of());
                case CHILD -> {
                    if (entries.isEmpty()) return;
                    Entry a = pick(s.a());
                    create(s.b() < 0 ? List.of(a) : List.of(a, pick(s.b())));
                }
                case PIN -> {
                    Entry e = pickLive(s.a());
                    if (e == null) return;
                    boolean closedBefore = e.closeReturned;
                    try {
                        Pin p = e.handle.pin();
                        e.heldPins.incrementAndGet();
                        pins.add(new Held(e, p));
                        if (closedBefore) violations.add("pin granted on closed #" + e.token);
                    } catch (ResourceClosedException closed) {
                        // allowed: it was closed (possibly by another thread just now)
                    }
                }
                case UNPIN -> {
                    if (pins.isEmpty()) return;
                    Held h = pins.remove(s.a() % pins.size());
                    h.entry().heldPins.decrementAndGet();
                    h.pin().close();
                }
                case CLOSE -> {
                    Entry e = pickLive(s.a());
                    if (e == null) return;
                    try {
                        e.handle.close();
                        e.closeReturned = true;
                        e.modelClosed = true;
                    } catch (ResourceBusyException busy) {
                        if (policy != ClosePolicy.STRICT) violations.add("busy under " + policy);
                    }
                }
                case CLOSE_TREE -> {
                    Entry e = pickLive(s.a());
                    if (e == null) return;
                    e.handle.closeTree();
                    closeModelTree(e, new HashSet<>());
                }
            }
        }

        private Entry pick(int i) {
            return entries.get(i % entries.size());
        }

        private Entry pickLive(int i) {
            if (entries.isEmpty()) return null;
            Entry e = pick(i);
            return e.handle == null ? null : e;
        }

        private void create(List<Entry> parents) {
            if (parents.stream().anyMatch(p -> p.handle == null)) return;
            var e = new Entry(tokens.incrementAndGet(), parents);
            Resource[] parentHandles = parents.stream().map(p -> p.handle).toArray(Resource[]::new);
            entries.add(e);
            boolean parentsClosedBefore = parents.stream().anyMatch(p -> p.closeReturned);
            e.creator = Thread.currentThread();
            try {
                e.handle = graph.create("n", "", () -> destroyed(e), parentHandles);
                parents.stream().distinct().forEach(p -> p.modelChildren.add(e));
                if (parentsClosedBefore) violations.add("child created under closed parent");
            } catch (ResourceClosedException closed) {
                if (e.destroys.get() != 1) violations.add("failed creation of #" + e.token + " not undone");
            } finally {
                e.creator = null;
            }
        }

        /** The destroy action: checks the rules at the moment the graph runs it. */
        private void destroyed(Entry e) {
            if (e.destroys.incrementAndGet() != 1) violations.add("#" + e.token + " destroyed twice");
            if (e.heldPins.get() != 0) violations.add("#" + e.token + " destroyed while pinned");
            if (e.creator == Thread.currentThread()) return; // undoing a creation that was never attached
            for (Entry p : e.parents) {
                if (p.destroys.get() != 0) violations.add("parent #" + p.token + " destroyed before child #" + e.token);
            }
        }

        private static void closeModelTree(Entry e, Set<Entry> seen) {
            if (!seen.add(e)) return;
            e.closeReturned = true;
            e.modelClosed = true;
            e.modelChildren.forEach(c -> closeModelTree(c, seen));
        }

        /** One thread: the graph must have destroyed exactly what the sequential model says. */
        private void checkAgainstModel(Step s) {
            for (Entry e : entries) {
                int expected = e.modelDestroyed() ? 1 : 0;
                if (e.destroys.get() != expected) {
                    violations.add("after " + s + ": #" + e.token + " destroyed " + e.destroys.get()
                            + " times, model says " + expected);
                }
            }
        }

        private void finish(List<List<Held>> pins) {
            for (List<Held> mine : pins) {
                for (Held h : mine) {
                    h.entry().heldPins.decrementAndGet();
                    h.pin().close();
                }
            }
            for (Entry e : entries) {
                if (e.handle == null) continue;
                if (policy == ClosePolicy.STRICT) e.handle.closeTree(); else e.handle.close();
            }
            for (Entry e : entries) {
                if (e.destroys.get() != 1) violations.add("#" + e.token + " destroyed " + e.destroys.get() + " times");
                if (e.handle != null) assertThrows(ResourceClosedException.class, e.handle::pin);
            }
            assertEquals(List.of(), List.copyOf(violations));
            assertEquals(0, graph.liveCount(), graph::dump);
        }
    }
}
