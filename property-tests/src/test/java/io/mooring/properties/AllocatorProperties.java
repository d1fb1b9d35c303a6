package io.mooring.properties;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import io.mooring.allocator.ArenaStats;
import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.lifecycle.ResourceInfo;
import io.mooring.lifecycle.ResourceListener;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.RdmaDevices;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * Random allocate / close / double-close / purge programs over random sizes and alignments on 1–4 platform or virtual
 * threads (these share their shards' magazines; busy ones are first warmed up so that the program runs across their
 * promotion to a cache of their own), against a checked or unchecked arena on the soft provider. While
 * running: no two live blocks overlap, every block lies inside its registered region and carries its lkey,
 * alignment holds, a second close is refused. At the end:
 * the per-class counts equal the model's, and once every block and the arena are closed every chunk was
 * deregistered and unmapped exactly once.
 */
class AllocatorProperties {
    private static final long[] SIZES = {1, 8, 16, 17, 64, 100, 500, 4096, 4097, 16384, 16385, 20_000, 70_000, 131_072,
            131_073, 300_000};
    private static final long[] ALIGNMENTS = {1, 8, 64, 4096, 65536};

    /** PURGE also asks every thread cache to trim at its owner's next call, and trims the magazines at once. */
    enum Op { ALLOCATE, CLOSE, DOUBLE_CLOSE, PURGE }

    /**
     * Which threads run the program. A busy virtual thread first makes {@value #WARM_UP} allocations of 64 B, a few
     * fewer than the 4,096 from its magazine after which it is given a cache of its own: blocks of the program's first
     * steps come from the magazine, the later ones from its own cache, and some live across the change.
     */
    enum Threads { PLATFORM, VIRTUAL, BUSY_VIRTUAL }

    private static final int WARM_UP = 4_092;

    record Step(int thread, Op op, int a, int b) {}

    private static Gen<Step> steps() {
        var ops = List.of(Op.ALLOCATE, Op.ALLOCATE, Op.CLOSE, Op.DOUBLE_CLOSE, Op.PURGE);
        return Generate.range(0, 3).zip(Generate.pick(ops),
                Generate.range(0, 1000), Generate.range(0, 1000), Step::new);
    }

    @Test
    void blocksNeverOverlapAndEveryChunkIsReleasedOnce() {
        qt().withExamples(60).withShrinkCycles(50)
                .forAll(integers().between(1, 4), Generate.booleans(), Generate.enumValues(Threads.class),
                        lists().of(steps()).ofSizeBetween(1, 120))
                .checkAssert((n, checked, threads, program) -> new Run(checked).execute(n, threads, program));
    }

    static final class Run {
        private final ResourceGraph graph;
        private final RdmaArena arena;
        private final ConcurrentSkipListMap<Long, Block> live = new ConcurrentSkipListMap<>();
        private final ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();
        private final Map<Long, AtomicInteger> smallAllocations = new ConcurrentHashMap<>();
        private final AtomicLong largeOrHuge = new AtomicLong();
        private final Map<Long, AtomicInteger> destroyed = new ConcurrentHashMap<>();
        private final AtomicInteger chunkMemories = new AtomicInteger();
        private final DeviceContext context;

        Run(boolean checked) {
            graph = ResourceGraph.builder().name("allocator-properties").listener(new ResourceListener() {
                @Override
                public void created(ResourceInfo r) {
                    if (r.kind().equals("chunk-memory")) chunkMemories.incrementAndGet();
                }

                @Override
                public void destroyed(ResourceInfo r) {
                    destroyed.computeIfAbsent(r.id(), k -> new AtomicInteger()).incrementAndGet();
                }
            }).build();
            context = RdmaDevices.open("soft:soft0", graph);
            arena = RdmaArena.builder(context.allocateProtectionDomain()).chunkSize(1 << 20).shards(2)
                    .checked(checked).build();
        }

        void execute(int n, Threads threads, List<Step> program) {
            Workers.runTogether(n, threads != Threads.PLATFORM, me -> {
                if (threads == Threads.BUSY_VIRTUAL) {
                    for (int i = 0; i < WARM_UP; i++) arena.allocate(64).close();
                    smallAllocations.computeIfAbsent(64L, k -> new AtomicInteger()).addAndGet(WARM_UP);
                }
                List<Block> mine = new ArrayList<>();
                for (Step s : program) if (s.thread() % n == me) apply(s, mine);
                for (Block b : mine) close(b); // each thread closes what it still owns
            });
            checkCounts();
            arena.close();
            graph.close();
            assertEquals(List.of(), List.copyOf(violations));
            assertEquals(0, graph.liveCount(), graph::dump);
            destroyed.forEach((id, times) -> assertEquals(1, times.get(), "resource " + id + " destroyed more than once"));
            assertEquals(chunkMemories.get(), arena.stats().deregistrations(), "every chunk deregistered once");
        }

        private void apply(Step s, List<Block> mine) {
            switch (s.op()) {
                case ALLOCATE -> {
                    long size = SIZES[s.a() % SIZES.length];
                    long alignment = ALIGNMENTS[s.b() % ALIGNMENTS.length];
                    Block b = arena.allocate(size, alignment);
                    check(b, size, alignment);
                    mine.add(b);
                    if (size <= 16384 && alignment <= 8192) {
                        long aligned = alignment > 16 ? (size + alignment - 1) & -alignment : size;
                        smallAllocations.computeIfAbsent(aligned, k -> new AtomicInteger()).incrementAndGet();
                    } else {
                        largeOrHuge.incrementAndGet();
                    }
                }
                case CLOSE -> {
                    if (!mine.isEmpty()) close(mine.remove(s.a() % mine.size()));
                }
                case DOUBLE_CLOSE -> {
                    if (mine.isEmpty()) return;
                    Block b = mine.remove(s.a() % mine.size());
                    close(b);
                    assertThrows(ResourceClosedException.class, b::close, "second close of " + b);
                }
                case PURGE -> arena.purge();
            }
        }

        private void check(Block b, long size, long alignment) {
            if (b.segment().byteSize() != size) violations.add(b + ": segment of " + b.segment().byteSize());
            if (b.address() % alignment != 0) violations.add(b + " not aligned to " + alignment);
            MemoryRegion r = b.region();
            if (b.address() < r.address() || b.address() + size > r.address() + r.length()) {
                violations.add(b + " outside " + r);
            }
            if (b.lkey() != r.lkey()) violations.add(b + " carries another region's lkey");
            Map.Entry<Long, Block> before = live.floorEntry(b.address());
            Map.Entry<Long, Block> after = live.ceilingEntry(b.address());
            if (before != null && before.getKey() + before.getValue().size() > b.address()) {
                violations.add(b + " overlaps " + before.getValue());
            }
            if (after != null && b.address() + size > after.getKey()) violations.add(b + " overlaps " + after.getValue());
            live.put(b.address(), b);
        }

        private void close(Block b) {
            live.remove(b.address(), b); // before close: once closed its memory may be handed out again
            b.close();
        }

        /** The arena's counts against the model's: small allocations per class, large and huge together. */
        private void checkCounts() {
            ArenaStats s = arena.stats();
            assertEquals(0, s.liveBlocks(), "every block was closed");
            assertEquals(0, s.activeBytes(), () -> "no byte counted active: " + s);
            Map<Long, Long> modelPerClass = new java.util.TreeMap<>();
            smallAllocations.forEach((size, n) -> modelPerClass.merge(
                    s.classes().stream().filter(c -> c.size() >= size).findFirst().orElseThrow().size(),
                    (long) n.get(), Long::sum));
            for (ArenaStats.ClassStats c : s.classes()) {
                assertEquals(modelPerClass.getOrDefault(c.size(), 0L), c.allocations(), "allocations of class " + c.size());
            }
            assertEquals(largeOrHuge.get(), s.largeAllocations() + s.hugeAllocations(), "large and huge allocations");
        }
    }
}
