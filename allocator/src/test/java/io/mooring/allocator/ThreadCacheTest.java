package io.mooring.allocator;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ThreadCacheTest {
    private final ArenaFixture fx = new ArenaFixture();

    @AfterEach
    void teardown() {
        fx.close();
    }

    @Test
    void repeatedSmallAllocationsHitTheCache() {
        try (RdmaArena arena = fx.arena().build()) {
            for (int i = 0; i < 1000; i++) arena.allocate(64).close();
            ArenaStats s = arena.stats();
            assertEquals(1, s.cacheMisses(), "one refill, then every allocation is served from the cache");
            assertEquals(999, s.cacheHits());
            assertEquals(1000, s.classes().get(SizeClasses.indexOf(64)).allocations());
            assertEquals(0, s.liveBlocks());
        }
    }

    @Test
    void largeClassesUpToTheCacheLimitAreCachedAsPageRuns() {
        try (RdmaArena arena = fx.arena().build()) {
            for (int i = 0; i < 1000; i++) arena.allocate(64 << 10).close();
            ArenaStats s = arena.stats();
            assertEquals(1, s.cacheMisses(), "one page run taken from the shard, then reused");
            assertEquals(999, s.cacheHits());
            assertEquals(1000, s.largeAllocations());
            assertEquals(1000, s.largeFrees());
            assertEquals(0, s.activeBytes(), "a cached run is not active");
            assertEquals(1, s.cachedRegions());
            arena.flushThreadCaches();
            arena.purge();
            assertEquals(0, arena.stats().chunks(), "the run went back to its chunk, which could be released");
        }
    }

    @Test
    void blocksAboveTheCacheLimitOrHugeAreNotCached() {
        try (RdmaArena arena = fx.arena().build()) {
            arena.allocate(ThreadCache.LARGE_MAX + 1).close();
            ArenaStats s = arena.stats();
            assertEquals(0, s.cacheHits() + s.cacheMisses());
            assertEquals(1, s.largeFrees());
        }
        try (RdmaArena arena = fx.arena().hugeThreshold(32 << 10).build()) {
            arena.allocate(32 << 10).close(); // huge here: a chunk of its own
            ArenaStats s = arena.stats();
            assertEquals(0, s.cacheHits() + s.cacheMisses());
            assertEquals(0, s.cachedRegions());
            assertEquals(1, s.hugeFrees());
        }
    }

    @Test
    void theCacheStaysBounded() {
        try (RdmaArena arena = fx.arena().build()) {
            List<Block> blocks = new ArrayList<>();
            for (int i = 0; i < 1000; i++) blocks.add(arena.allocate(64));
            blocks.forEach(Block::close);
            assertTrue(arena.stats().cachedRegions() <= ThreadCache.MAX_SLOTS, "cached " + arena.stats().cachedRegions());
            arena.flushThreadCaches();
            assertEquals(0, arena.stats().cachedRegions());
        }
    }

    /**
     * A class the thread only allocates, then only frees, grows its stack to {@code GROWTH} times its base (so that
     * its flushes, and refills from the depot, move that many times more regions per lock), and no further; a flush
     * takes it back.
     */
    @Test
    void aClassUsedOneWayGrowsItsStackBoundedAndAFlushShrinksIt() {
        try (RdmaArena arena = fx.arena().build()) {
            int c = SizeClasses.indexOf(4096);
            List<Block> blocks = new ArrayList<>();
            blocks.add(arena.allocate(4096));
            ThreadCache cache = arena.threads.existingCaller().cache;
            int base = cache.slots(c);
            assertEquals(8, base, "32 KiB of 4 KiB regions");
            for (int i = 1; i < 1000; i++) blocks.add(arena.allocate(4096));
            assertEquals(ThreadCache.GROWTH * base, cache.slots(c), "grown while only allocating, to its bound");
            blocks.forEach(Block::close);
            assertTrue(arena.stats().cachedRegions() <= ThreadCache.GROWTH * base, arena.stats()::toString);
            arena.flushThreadCaches();
            assertEquals(base, cache.slots(c), "back to its base");
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    /**
     * Each purge trims the caches at their owners' next calls: a class used since the previous trim halves its grown
     * stack, one left idle is given back whole — so a thread that moved on to other sizes keeps none of the old.
     */
    @Test
    void aPurgeHalvesAGrownClassThenGivesItBackOnceIdle() {
        try (RdmaArena arena = fx.arena().decay(java.time.Duration.ofHours(1)).build()) { // only the purges here
            int c = SizeClasses.indexOf(4096);
            List<Block> blocks = new ArrayList<>();
            for (int i = 0; i < 1000; i++) blocks.add(arena.allocate(4096));
            blocks.forEach(Block::close);
            ThreadCache cache = arena.threads.existingCaller().cache;
            int base = 8;
            assertEquals(ThreadCache.GROWTH * base, cache.slots(c));
            long held = arena.stats().cachedRegions(); // of this class alone
            assertTrue(held > 2 * base, "more than half of its grown stack after the frees: " + held);
            arena.allocate(64).close(); // from now on the thread uses only 64 B
            long small = arena.stats().cachedRegions() - held;

            arena.purge();
            assertEquals(held + small, arena.stats().cachedRegions(), "a trim waits for the owner's next call");
            arena.allocate(64).close();
            assertEquals(2 * base, cache.slots(c), "used since the last trim: halved");
            assertEquals(2 * base + small, arena.stats().cachedRegions(), "the oldest beyond its new bound flushed");

            arena.purge();
            arena.allocate(64).close();
            assertEquals(base, cache.slots(c), "idle since the last trim: back at its base");
            assertEquals(small, arena.stats().cachedRegions(), "and given back whole; the class in use keeps its own");
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    /** The virtual threads' magazines are trimmed by the purge itself: their users are many, and need not come back. */
    @Test
    void aPurgeTrimsTheMagazinesAtOnce() throws Exception {
        try (RdmaArena arena = fx.arena().decay(java.time.Duration.ofHours(1)).build()) {
            Thread.ofVirtual().start(() -> {
                List<Block> blocks = new ArrayList<>();
                for (int i = 0; i < 100; i++) blocks.add(arena.allocate(4096));
                blocks.forEach(Block::close);
            }).join();
            long held = arena.stats().cachedRegions();
            int base = 8;
            assertTrue(held > 2 * base, "the magazine's 4 KiB stack grew: " + held);
            arena.purge();
            assertEquals(2 * base, arena.stats().cachedRegions(), "used since the last trim: halved");
            arena.purge();
            assertEquals(0, arena.stats().cachedRegions(), "idle since the last purge");
        }
    }

    /**
     * What a consumer's cache flushes goes whole to the producer's next refill, newest first — not region by region
     * through the slabs, which would hand out the lowest addresses first.
     */
    @Test
    void aBatchFlushedByOneThreadRefillsAnothersCacheWhole() throws Exception {
        try (RdmaArena arena = fx.arena().build();
             var consumer = Executors.newSingleThreadExecutor()) {
            List<Block> made = new ArrayList<>();
            for (int i = 0; i < 96; i++) made.add(arena.allocate(64)); // three refills of 33: 3 left cached here
            made.forEach(Block::handOff);
            List<Block> freed = new ArrayList<>(made);
            java.util.Collections.shuffle(freed, new java.util.Random(7));
            consumer.submit(() -> freed.forEach(Block::close)).get(); // 64 cached there, the oldest 32 flushed
            for (int i = 0; i < 3; i++) arena.allocate(64).close(); // this cache's own three, pushed back: no refill
            List<Block> three = new ArrayList<>();
            for (int i = 0; i < 3; i++) three.add(arena.allocate(64));
            List<Long> refilled = new ArrayList<>();
            for (int i = 0; i < 32; i++) refilled.add(arena.allocate(64).address());
            List<Long> flushed = new ArrayList<>();
            for (int i = 31; i >= 0; i--) flushed.add(freed.get(i).address());
            assertEquals(flushed, refilled, "the flushed batch, newest first");
        }
    }

    @Test
    void aPurgeDrainsFlushedBatchesSoTheirChunkCanGo() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            List<Block> made = new ArrayList<>();
            for (int i = 0; i < 500; i++) made.add(arena.allocate(64));
            made.forEach(Block::handOff);
            Thread.ofPlatform().start(() -> made.forEach(Block::close)).join(); // flushed batches, then the thread ends
            arena.flushThreadCaches();
            arena.purge();
            assertEquals(0, arena.stats().liveBlocks());
            assertEquals(0, arena.stats().chunks(), "every region back in its slab, the chunk released");
        }
    }

    @Test
    void aDeadThreadsCacheIsReturned() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Thread t = Thread.ofPlatform().start(() -> arena.allocate(256).close());
            t.join();
            assertEquals(1, arena.stats().cachedRegions() > 0 ? 1 : 0, "the dead thread left regions cached");
            arena.purge();
            assertEquals(0, arena.stats().cachedRegions());
            assertEquals(0, arena.stats().chunks(), "its chunk could be released");
        }
    }

    /** An ended thread's cache is flushed; what it counted must stay in the stats, or live counts would go negative. */
    @Test
    void anEndedThreadsCountsStayInTheStats() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            List<Block> made = new ArrayList<>();
            Thread owner = Thread.ofPlatform().start(() -> {
                arena.allocate(64).close();
                made.add(arena.allocate(64));
                made.add(arena.allocate(64 << 10));
            });
            owner.join();
            made.forEach(Block::close); // the owner is dead: freed here, into the shard
            arena.purge(); // flushes the ended thread's cache
            ArenaStats s = arena.stats();
            assertEquals(0, s.liveBlocks(), s::toString);
            assertEquals(2, s.classes().get(SizeClasses.indexOf(64)).allocations());
            assertEquals(2, s.classes().get(SizeClasses.indexOf(64)).frees());
            assertEquals(1, s.largeAllocations());
            assertEquals(1, s.cacheHits(), "the second 64 B allocation");
            assertEquals(0, s.activeBytes());
        }
    }

    @Test
    void virtualThreadsShareTheirShardsMagazine() throws Exception {
        RdmaArena arena = fx.arena().build();
        for (int i = 0; i < 200; i++) { // one after the other: nobody finds the magazine held
            Thread.ofVirtual().start(() -> arena.allocate(64).close()).join();
        }
        ArenaStats s = arena.stats();
        assertEquals(1, s.cacheMisses(), "one refill");
        assertEquals(199, s.cacheHits(), "every other allocation from the magazine");
        assertTrue(s.cachedRegions() > 0);
        assertEquals(200, s.classes().get(SizeClasses.indexOf(64)).frees());
        arena.flushThreadCaches();
        assertEquals(0, arena.stats().cachedRegions(), "flushed now, with no thread to wait for");
        Thread.ofVirtual().start(() -> arena.allocate(64).close()).join();
        arena.close();
        assertEquals(0, arena.stats().cachedRegions(), "retired by close");
        assertEquals(0, arena.stats().chunks());
    }

    /**
     * A virtual thread is found through the thread-id slots from its second call on, and its magazine's blocks take
     * the platform threads' fast close, which leaves the closed scope in place: every segment still throws after
     * close, on the owner and elsewhere.
     */
    @Test
    void aVirtualThreadsBlocksFromTheFastPathThrowAfterClose() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            List<MemorySegment> closed = new ArrayList<>();
            AtomicReference<Throwable> onOwner = new AtomicReference<>();
            Thread.ofVirtual().start(() -> {
                for (int i = 0; i < 1000; i++) {
                    Block b = arena.allocate(64);
                    MemorySegment s = b.segment();
                    s.set(JAVA_LONG, 0, i);
                    b.close();
                    try {
                        s.get(JAVA_LONG, 0);
                        onOwner.set(new AssertionError("read block " + i + " after its close"));
                        return;
                    } catch (IllegalStateException expected) {
                        if (i % 100 == 0) closed.add(s);
                    }
                }
            }).join();
            assertNull(onOwner.get());
            assertTrue(arena.stats().cacheHits() >= 999, "served by the magazine");
            for (MemorySegment s : closed) {
                assertInstanceOf(WrongThreadException.class, assertThrows(RuntimeException.class, () -> s.get(JAVA_LONG, 0)));
            }
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    @Test
    void virtualThreadsRacingForTheMagazineAllocateEachBlockOnce() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Set<Long> live = ConcurrentHashMap.newKeySet();
            AtomicReference<String> clash = new AtomicReference<>();
            try (var executor = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int t = 0; t < 64; t++) {
                    executor.submit(() -> {
                        for (int i = 0; i < 2000; i++) {
                            Block b = arena.allocate(64 + (i % 4) * 64);
                            if (!live.add(b.address())) clash.set(b + " handed out twice");
                            live.remove(b.address());
                            b.close();
                        }
                    });
                }
            }
            assertNull(clash.get());
            assertEquals(0, arena.stats().liveBlocks());
            assertTrue(arena.stats().cacheHits() > 0);
        }
    }

    /**
     * A virtual thread busy on its magazine gets a cache of its own, and the blocks it allocated from the magazine
     * before close into that cache like any other; once it has ended, a collector pass flushes the cache and nothing of
     * the thread is kept.
     */
    @Test
    void aBusyVirtualThreadIsPromotedToACacheOfItsOwn() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            var promoted = new AtomicReference<Boolean>();
            var fromMagazine = new ArrayList<MemorySegment>();
            var release = new CountDownLatch(1);
            Thread busy = Thread.ofVirtual().start(() -> {
                List<Block> early = new ArrayList<>();
                for (int i = 0; i < 8; i++) early.add(arena.allocate(64)); // from the magazine
                for (int i = 0; i < ThreadBinding.PROMOTE_AFTER; i++) arena.allocate(64).close();
                Caller me = arena.threads.existingCaller();
                promoted.set(me.magazine == null && me.cache != null);
                for (Block b : early) {
                    fromMagazine.add(b.segment());
                    b.close();
                }
                try (Block b = arena.allocate(128)) {
                    b.segment().fill((byte) 7);
                }
                stayAliveUntil(release);
            });
            ArenaFixture.awaitTrue(() -> promoted.get() != null, "the busy thread's allocations done");
            assertTrue(promoted.get(), "promoted after " + ThreadBinding.PROMOTE_AFTER + " magazine allocations");
            assertEquals(1, arena.threadStates(), "its cache registered, to be flushed when it ends");
            for (MemorySegment s : fromMagazine) assertThrows(RuntimeException.class, () -> s.get(JAVA_LONG, 0));
            release.countDown();
            busy.join();
            assertEquals(0, arena.stats().liveBlocks());
            arena.purge(); // a collector pass: flushes the ended thread's cache
            assertEquals(0, arena.threadStates(), "nothing kept for the ended thread");
            arena.flushThreadCaches(); // and the magazines
            ArenaStats s = arena.stats();
            assertEquals(0, s.cachedRegions(), s::toString);
            assertEquals(s.classes().get(SizeClasses.indexOf(64)).allocations(),
                    s.classes().get(SizeClasses.indexOf(64)).frees());
        }
    }

    /**
     * A virtual thread that always finds its magazine held by others allocates from the shard, under its lock — the
     * busiest kind, which needs a cache of its own the most: those allocations count towards its promotion too.
     */
    @Test
    void aVirtualThreadWhoseMagazineIsHeldIsPromotedToo() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            var magazine = new AtomicReference<Magazine>();
            var held = new CountDownLatch(1);
            var promoted = new AtomicReference<Boolean>();
            Thread busy = Thread.ofVirtual().start(() -> {
                arena.allocate(64).close();
                magazine.set(arena.threads.existingCaller().magazine);
                stayAliveUntil(held);
                for (int i = 0; i < ThreadBinding.PROMOTE_AFTER; i++) arena.allocate(64).close();
                Caller me = arena.threads.existingCaller();
                promoted.set(me.magazine == null && me.cache != null);
            });
            ArenaFixture.awaitTrue(() -> magazine.get() != null, "the magazine in use");
            int c = SizeClasses.indexOf(64);
            long served = magazine.get().cache.allocations(c);
            magazine.get().hold(); // by this thread, for the whole run
            held.countDown();
            busy.join();
            magazine.get().letGo();
            assertTrue(promoted.get(), "promoted after " + ThreadBinding.PROMOTE_AFTER + " allocations from the shard");
            assertEquals(served, magazine.get().cache.allocations(c), "none served by the held magazine");
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    /**
     * At most {@code maxPromoted} virtual threads hold a cache of their own at once; an ended one's place goes to the
     * next busy thread after a collector pass, which the thread that found no place asked for.
     */
    @Test
    void promotedVirtualThreadsAreBoundedAndTheirPlacesReused() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            int max = arena.threads.maxPromoted();
            var release = new CountDownLatch(1);
            var busyDone = new CountDownLatch(max + 2);
            var promotedCount = new AtomicInteger();
            List<Thread> busy = new ArrayList<>();
            for (int t = 0; t < max + 2; t++) {
                busy.add(Thread.ofVirtual().start(() -> {
                    Caller me;
                    do { // until promoted or refused: allocations that found the magazine held do not count
                        arena.allocate(64).close();
                        me = arena.threads.existingCaller();
                    } while (me.cache == null && me.magazineAllocations < ThreadBinding.PROMOTE_AFTER);
                    if (me.cache != null) promotedCount.incrementAndGet();
                    busyDone.countDown();
                    stayAliveUntil(release);
                }));
            }
            busyDone.await();
            assertEquals(max, promotedCount.get(), "promoted while " + (max + 2) + " busy threads were alive");
            assertEquals(max, arena.threadStates());
            release.countDown();
            for (Thread t : busy) t.join();
            var late = new AtomicReference<Boolean>();
            Thread.ofVirtual().start(() -> { // its first asks find every place taken by an ended thread
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (arena.threads.existingCaller() == null || arena.threads.existingCaller().cache == null) {
                    if (System.nanoTime() > deadline) break;
                    arena.allocate(64).close();
                }
                late.set(arena.threads.existingCaller().cache != null);
            }).join();
            assertTrue(late.get(), "a later busy thread took an ended one's place");
            arena.purge();
            assertEquals(0, arena.threadStates(), "every ended thread's cache flushed");
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    /** Keeps a busy test thread alive (and its cache registered) until the test lets it end. */
    private static void stayAliveUntil(CountDownLatch release) {
        try {
            release.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void cachesCanBeTurnedOff() {
        try (RdmaArena arena = fx.arena().threadCache(0).build()) {
            arena.allocate(64).close();
            assertEquals(0, arena.stats().cacheMisses());
        }
    }
}
