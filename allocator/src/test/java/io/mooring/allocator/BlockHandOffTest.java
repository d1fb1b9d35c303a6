package io.mooring.allocator;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceClosedException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A checked block handed between threads: each holder has its own confined scope; a close needs no owner. */
class BlockHandOffTest {
    private final ArenaFixture fx = new ArenaFixture();
    private final ExecutorService second = Executors.newSingleThreadExecutor();
    private final ExecutorService third = Executors.newSingleThreadExecutor();

    @AfterEach
    void teardown() {
        second.close();
        third.close();
        fx.close();
    }

    @Test
    void allocatedHereFilledOnASecondThreadReadAndFreedOnAThird() throws Exception {
        try (RdmaArena arena = fx.arena().threadCache(0).build()) {
            Block b = arena.allocate(64);
            MemorySegment mine = b.segment();
            mine.set(JAVA_LONG, 0, 1);
            b.handOff();
            assertThrows(IllegalStateException.class, () -> mine.get(JAVA_LONG, 0), "the owner's hold ended");
            MemorySegment[] filler = new MemorySegment[1];
            on(second, () -> {
                filler[0] = b.segment();
                assertEquals(1, filler[0].get(JAVA_LONG, 0));
                filler[0].set(JAVA_LONG, 0, 2);
                b.handOff();
                return null;
            });
            long read = on(third, () -> {
                long v = b.segment().get(JAVA_LONG, 0);
                b.close();
                return v;
            });
            assertEquals(2, read);
            assertFalse(b.isOpen());
            assertThrows(ResourceClosedException.class, b::segment);
            assertEquals(0, arena.stats().liveBlocks(), "freed by its closer, the owner idle");
            assertEquals(0, arena.stats().uncollectedFrees());
            long reusedBy = on(second, () -> {
                try (Block next = arena.allocate(64)) {
                    return next.address();
                }
            });
            assertEquals(b.address(), reusedBy, "reusable by any thread, the owner never having called again");
        }
    }

    @Test
    void theOwnerReusesWhatAnotherThreadClosedAfterAHandOff() throws Exception {
        try (RdmaArena arena = fx.arena().threadCache(0).build()) {
            Block b = arena.allocate(64);
            b.handOff();
            on(second, () -> {
                b.segment().set(JAVA_LONG, 0, 1);
                b.close();
                return null;
            });
            try (Block next = arena.allocate(64)) {
                assertEquals(b.address(), next.address(), "freed into the shard by the closer, handed out again");
                assertEquals(0, arena.stats().uncollectedFrees());
            }
        }
    }

    @Test
    void aHandedOffBlockGoesIntoItsClosersCacheAtOnce() throws Exception {
        try (RdmaArena arena = fx.arena().shards(2).build()) {
            Block b = arena.allocate(64); // this thread's cache, on the first shard
            b.handOff();
            long reused = on(second, () -> { // the second shard's thread
                b.segment().set(JAVA_LONG, 0, 1);
                b.close();
                assertEquals(0, arena.stats().uncollectedFrees(), "not waiting for the owner");
                assertEquals(0, arena.stats().liveBlocks());
                try (Block next = arena.allocate(64)) {
                    return next.address();
                }
            });
            assertEquals(b.address(), reused, "the closer's cache took it: its next allocation of the class");
        }
    }

    @Test
    void regionsFreedOnAnotherShardGoBackToTheirOwnShard() throws Exception {
        RdmaArena arena = fx.arena().shards(2).build();
        // This thread (shard 0) allocates and hands off; the second (shard 1) closes them, caching and flushing
        // shard 0's regions, and allocates from its own shard: each shard's bins and chunks must see only their own.
        for (int round = 0; round < 3; round++) {
            List<Block> passed = new ArrayList<>();
            for (int i = 0; i < 600; i++) {
                Block b = arena.allocate(i % 3 == 0 ? 64 : i % 3 == 1 ? 4096 : 40_000);
                b.segment().set(JAVA_LONG, 0, i);
                b.handOff();
                passed.add(b);
            }
            on(second, () -> {
                TreeMap<Long, Block> own = new TreeMap<>();
                for (int i = 0; i < passed.size(); i++) {
                    assertEquals(i, passed.get(i).segment().get(JAVA_LONG, 0));
                    passed.get(i).close();
                    Block b = arena.allocate(passed.get(i).size());
                    var below = own.floorEntry(b.address() + b.size() - 1);
                    assertTrue(below == null || below.getKey() + below.getValue().size() <= b.address(),
                            () -> b + " overlaps " + below.getValue());
                    own.put(b.address(), b);
                }
                own.values().forEach(Block::close);
                return null;
            });
        }
        assertEquals(0, arena.stats().liveBlocks());
        arena.close();
        assertEquals(0, arena.stats().chunks(), "every chunk released, by the shard that cut it");
    }

    @Test
    void anotherThreadCannotUseOrCloseABlockSomeoneHolds() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(64);
            b.handOff();
            on(second, () -> b.segment().set(JAVA_LONG, 0, 5));
            var e = assertThrows(WrongThreadException.class, b::segment);
            assertTrue(e.getMessage().contains("handOff()"), e.getMessage());
            assertThrows(WrongThreadException.class, b::close);
            assertThrows(WrongThreadException.class, b::handOff);
            assertTrue(b.isOpen(), "a refused close changes nothing");
            on(third, () -> {
                assertThrows(WrongThreadException.class, b::segment);
                return null;
            });
            on(second, () -> {
                assertEquals(5, b.segment().get(JAVA_LONG, 0));
                b.close();
                return null;
            });
            assertEquals(0, arena.stats().liveBlocks(), "freed by its closer, the owner idle");
        }
    }

    @Test
    void aBlockNobodyHoldsIsClosedByAnyThreadAndNobodyTakesHoldAfter() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(4096);
            b.segment().fill((byte) 3);
            b.handOff();
            on(second, () -> {
                b.close();
                return null;
            });
            assertEquals(0, arena.stats().liveBlocks(), "freed by its closer, the owner idle");
            assertThrows(ResourceClosedException.class, b::segment);
            assertThrows(ResourceClosedException.class, b::close);
            assertThrows(ResourceClosedException.class, b::handOff);
        }
    }

    @Test
    void theOwnerMayTakeItsBlockBack() {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(64);
            b.handOff();
            b.segment().set(JAVA_LONG, 0, 9);
            b.handOff();
            assertEquals(9, b.segment().get(JAVA_LONG, 0));
            b.close();
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    @Test
    void racingThreadsTakeHoldOnceAndACloseRacingAHoldFreesOnlyWhenNobodyHolds() throws Exception {
        try (RdmaArena arena = fx.arena().build();
             ExecutorService pool = Executors.newFixedThreadPool(3)) {
            for (int round = 0; round < 300; round++) {
                Block b = arena.allocate(128);
                b.handOff();
                var start = new CyclicBarrier(3);
                AtomicInteger held = new AtomicInteger();
                AtomicInteger closed = new AtomicInteger();
                List<Future<?>> racers = new ArrayList<>();
                for (int t = 0; t < 2; t++) {
                    racers.add(pool.submit(() -> {
                        start.await();
                        try {
                            b.segment().set(JAVA_LONG, 0, 1);
                            held.incrementAndGet();
                            b.close();
                            closed.incrementAndGet();
                        } catch (WrongThreadException | ResourceClosedException refused) {
                            // another racer holds it, or closed it
                        }
                        return null;
                    }));
                }
                racers.add(pool.submit(() -> {
                    start.await();
                    try {
                        b.close();
                        closed.incrementAndGet();
                    } catch (WrongThreadException | ResourceClosedException refused) {
                        // a racer holds it, or closed it
                    }
                    return null;
                }));
                for (Future<?> f : racers) f.get();
                assertTrue(held.get() <= 1, "one holder at most");
                assertEquals(1, closed.get(), "closed exactly once");
            }
            arena.allocate(64).close(); // the owner's call collects what the racers closed
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    @Test
    void aPinnedHandedOffBlockIsFreedByItsLastUnpinOnAnyThread() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(64);
            b.handOff();
            Block.Pin pin = on(second, () -> b.pin(null));
            AtomicInteger told = new AtomicInteger();
            on(third, () -> {
                Block.Pin own = b.pin(told::incrementAndGet);
                MemorySegment s = b.segment();
                b.close();
                assertThrows(IllegalStateException.class, () -> s.get(JAVA_LONG, 0));
                own.close();
                return null;
            });
            assertEquals(1, told.get());
            assertEquals(1, arena.stats().closedPinnedBlocks());
            Thread.ofVirtual().start(pin::close).join();
            assertEquals(0, arena.stats().closedPinnedBlocks());
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    @Test
    void virtualThreadsPassABlockAlongAChain() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(256);
            b.segment().set(JAVA_LONG, 0, 0);
            b.handOff();
            for (int i = 0; i < 50; i++) {
                Thread.ofVirtual().start(() -> {
                    MemorySegment s = b.segment();
                    s.set(JAVA_LONG, 0, s.get(JAVA_LONG, 0) + 1);
                    b.handOff();
                }).join();
            }
            assertEquals(50, b.segment().get(JAVA_LONG, 0));
            b.close();
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    @Test
    void sharedAndUncheckedBlocksNeedNoHandOff() throws Exception {
        try (RdmaArena arena = fx.arena().build();
             RdmaArena unchecked = fx.arena().checked(false).build()) {
            for (Block b : List.of(arena.allocateShared(64, 8), unchecked.allocate(64))) {
                b.handOff();
                on(second, () -> b.segment().set(JAVA_LONG, 0, 1));
                b.segment().get(JAVA_LONG, 0);
                b.close();
                assertThrows(ResourceClosedException.class, b::handOff);
            }
            assertEquals(0, arena.stats().liveBlocks());
            assertEquals(0, unchecked.stats().liveBlocks());
        }
    }

    private static <T> T on(ExecutorService thread, Callable<T> step) throws Exception {
        return thread.submit(step).get();
    }

    private static void on(ExecutorService thread, Runnable step) throws Exception {
        thread.submit(step).get();
    }
}
