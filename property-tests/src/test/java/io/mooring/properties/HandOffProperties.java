package io.mooring.properties;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.integers;
import static org.quicktheories.generators.SourceDSL.lists;

import io.mooring.allocator.ArenaStats;
import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.RdmaDevices;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * Random programs that move checked blocks between 2–4 threads (platform or virtual) by hand-off: allocate, write a
 * tag, hand off to another thread's mailbox, which takes hold, checks the tag and writes its own; close anywhere,
 * pinned or not. While running: a segment made before its block was handed off or closed throws on every access
 * (never reads or writes memory handed to someone else), a mailbox delivers what its sender wrote, and no two live
 * blocks overlap. At the end: nothing is live or waits to be collected (a close after a hand-off frees on the
 * closer, into its cache), and once the caches are flushed — into each region's own shard — closing the arena
 * releases every chunk.
 */
class HandOffProperties {
    private static final long[] SIZES = {8, 64, 500, 4096, 20_000, 131_072};

    enum Op { ALLOCATE, PASS, CLOSE, PIN_AND_CLOSE, TOUCH_STALE }

    record Step(int thread, Op op, int a) {}

    private static Gen<Step> steps() {
        return Generate.range(0, 3).zip(Generate.pick(List.of(Op.ALLOCATE, Op.ALLOCATE, Op.PASS, Op.PASS, Op.CLOSE,
                Op.PIN_AND_CLOSE, Op.TOUCH_STALE)), Generate.range(0, 1000), Step::new);
    }

    @Test
    void handedOffBlocksAreSafeEverywhereAndFreedAtOnce() {
        qt().withExamples(60).withShrinkCycles(50)
                .forAll(integers().between(2, 4), Generate.booleans(), lists().of(steps()).ofSizeBetween(1, 120))
                .checkAssert((threads, virtual, program) -> new Run(threads).execute(virtual, program));
    }

    /** A block in flight or held, with the tag its last writer left. */
    private record Held(Block block, long tag) {}

    static final class Run {
        private final ResourceGraph graph = ResourceGraph.builder().name("handoff-properties").build();
        // Small caches (4 regions a class): closers' caches flush other shards' regions, and refills take the
        // depot's batches, every few blocks.
        private final RdmaArena arena = RdmaArena.builder(RdmaDevices.open("soft:soft0", graph)
                .allocateProtectionDomain()).chunkSize(1 << 20).shards(2).threadCache(256).build();
        private final List<Queue<Held>> mailboxes = new ArrayList<>();
        private final ConcurrentSkipListMap<Long, Block> live = new ConcurrentSkipListMap<>();
        private final Queue<String> violations = new ConcurrentLinkedQueue<>();
        private final AtomicLong tags = new AtomicLong();
        private final int threads;

        Run(int threads) {
            this.threads = threads;
            for (int t = 0; t < threads; t++) mailboxes.add(new ConcurrentLinkedQueue<>());
        }

        void execute(boolean virtual, List<Step> program) {
            Workers.runTogether(threads, virtual, me -> {
                List<Held> mine = new ArrayList<>();
                List<MemorySegment> stale = new ArrayList<>(); // made here before a hand-off or close
                for (Step s : program) {
                    if (s.thread() % threads != me) continue;
                    for (Held h; (h = mailboxes.get(me).poll()) != null; ) mine.add(takeHold(h));
                    apply(me, s, mine, stale);
                }
                for (Held h : mine) stale.add(close(h.block()));
                stale.forEach(this::touchMustThrow); // by their maker: from elsewhere a confined segment always throws
            });
            for (Queue<Held> box : mailboxes) { // nobody holds these: anyone closes them
                for (Held h : box) {
                    live.remove(h.block().address(), h.block());
                    h.block().close();
                }
            }
            // Every close here is an owner's of a block never handed off, or a close after a hand-off, which frees
            // the memory on the closer: nothing is left for an owner or the collector to collect.
            ArenaStats stats = arena.stats();
            assertEquals(0, stats.liveBlocks(), () -> "freed by their closers: " + stats);
            assertEquals(0, stats.uncollectedFrees());
            arena.flushThreadCaches(); // the ended workers' caches, holding other shards' regions, go back to theirs
            arena.close();
            assertEquals(0, arena.stats().chunks(), "every chunk released");
            graph.close();
            assertEquals(List.of(), List.copyOf(violations));
        }

        private void apply(int me, Step s, List<Held> mine, List<MemorySegment> stale) {
            switch (s.op()) {
                case ALLOCATE -> {
                    Block b = arena.allocate(SIZES[s.a() % SIZES.length]);
                    Map.Entry<Long, Block> before = live.floorEntry(b.address() + b.size() - 1);
                    if (before != null && before.getKey() + before.getValue().size() > b.address()) {
                        violations.add(b + " overlaps " + before.getValue());
                    }
                    live.put(b.address(), b);
                    mine.add(write(b));
                }
                case PASS -> {
                    if (mine.isEmpty()) return;
                    Held h = mine.remove(s.a() % mine.size());
                    MemorySegment made = h.block().segment();
                    h.block().handOff();
                    touchMustThrow(made);
                    stale.add(made);
                    mailboxes.get((me + 1 + s.a() % (threads - 1)) % threads).add(new Held(h.block(), h.tag()));
                }
                case CLOSE -> {
                    if (!mine.isEmpty()) stale.add(close(mine.remove(s.a() % mine.size()).block()));
                }
                case PIN_AND_CLOSE -> {
                    if (mine.isEmpty()) return;
                    Block b = mine.remove(s.a() % mine.size()).block();
                    Block.Pin pin = b.pin(null);
                    MemorySegment made = b.segment();
                    live.remove(b.address(), b);
                    b.close();
                    touchMustThrow(made);
                    stale.add(made);
                    if (arena.stats().closedPinnedBlocks() < 1) violations.add(b + " closed while pinned, not counted");
                    pin.close();
                }
                case TOUCH_STALE -> {
                    if (!stale.isEmpty()) touchMustThrow(stale.get(s.a() % stale.size()));
                }
            }
        }

        /** The receiver takes hold: the tag is what the previous holder wrote. */
        private Held takeHold(Held h) {
            long seen = h.block().segment().get(JAVA_LONG, 0);
            if (seen != h.tag()) violations.add(h.block() + " carried " + seen + ", sent " + h.tag());
            return write(h.block());
        }

        private Held write(Block b) {
            long tag = tags.incrementAndGet();
            MemorySegment s = b.segment();
            s.set(JAVA_LONG, 0, tag);
            return new Held(b, tag);
        }

        /** Closes a block and returns a segment made just before: dead from now on. */
        private MemorySegment close(Block b) {
            live.remove(b.address(), b); // before close: once closed its memory may be handed out again
            MemorySegment made = b.segment();
            b.close();
            touchMustThrow(made);
            return made;
        }

        /** On the thread that made {@code s}: its scope must be closed. */
        private void touchMustThrow(MemorySegment s) {
            try {
                s.get(JAVA_LONG, 0);
                violations.add("a segment of a block handed off or closed was still usable: " + s);
            } catch (IllegalStateException expected) {
                // its scope is closed
            }
        }
    }
}
