package io.mooring.regcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.mooring.allocator.internal.KernelPage;
import io.mooring.lifecycle.ClosePolicy;
import io.mooring.lifecycle.ResourceBusyException;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceInfo;
import io.mooring.lifecycle.ResourceListener;
import io.mooring.lifecycle.ResourceState;
import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.QpCapabilities;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

class RegistrationCacheTest {
    private static final long PAGE = KernelPage.SIZE; // registrations cover whole kernel pages
    private static final Set<Access> LOCAL = EnumSet.of(Access.LOCAL_WRITE);
    private static final Set<Access> READABLE = EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_READ);
    /** The soft provider's locked-memory limit in bytes, read at each registration (its class is not exported). */
    private static final String SOFT_MEMLOCK = "mooring.soft.memlock";

    /** Counts native destroys of memory regions per resource id. */
    private final Map<Long, AtomicInteger> mrDestroys = new ConcurrentHashMap<>();
    private final AtomicInteger mrsCreated = new AtomicInteger();
    /** While set, the first registration waits on it inside {@code ibv_reg_mr}'s soft twin: a slow registration. */
    private volatile CountDownLatch slowRegistration;
    private final CountDownLatch slowRegistrationStarted = new CountDownLatch(1);
    private final AtomicBoolean slowed = new AtomicBoolean();
    private final PdFixture fx = new PdFixture(ClosePolicy.DEFERRED, new ResourceListener() {
        @Override
        public void created(ResourceInfo r) {
            if (!r.kind().equals("mr")) return;
            mrsCreated.incrementAndGet();
            CountDownLatch gate = slowRegistration;
            if (gate != null && slowed.compareAndSet(false, true)) {
                slowRegistrationStarted.countDown();
                try {
                    gate.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        @Override
        public void destroyed(ResourceInfo r) {
            if (r.kind().equals("mr")) mrDestroys.computeIfAbsent(r.id(), id -> new AtomicInteger()).incrementAndGet();
        }
    });
    private final Arena memory = Arena.ofShared();

    @AfterEach
    void teardown() {
        fx.close(); // deregisters everything before the memory goes
        memory.close();
        mrDestroys.forEach((id, n) -> assertEquals(1, n.get(), "mr#" + id + " destroyed " + n + " times"));
        assertEquals(mrsCreated.get(), mrDestroys.size(), "every region is deregistered in the end");
    }

    private RegistrationCache.Builder cache() {
        return RegistrationCache.builder(fx.pd);
    }

    private RegistrationCache.Builder lru() {
        return cache().eviction(EvictionPolicy.LEAST_RECENTLY_USED);
    }

    private MemorySegment pages(int n) {
        return memory.allocate(n * PAGE, PAGE);
    }

    private static ResourceState state(MemoryRegion r) {
        return r.resource().state();
    }

    @Test
    void theSamePagesAgainAreAHit() {
        try (RegistrationCache cache = cache().build()) {
            MemorySegment buf = pages(4);
            MemoryRegion first;
            try (Registration reg = cache.acquire(buf.asSlice(100, 200))) {
                first = reg.region();
                assertEquals(buf.address(), first.address(), "registered from the page start");
                assertEquals(PAGE, first.length(), "one page");
                assertEquals(100, reg.offset());
                assertEquals(first.lkey(), reg.lkey());
                assertEquals(buf.address() + 100, reg.segment().address());
            }
            try (Registration reg = cache.acquire(buf.asSlice(1000, 8))) {
                assertSame(first, reg.region(), "another byte range in the same page");
                assertEquals(1000, reg.offset());
            }
            RegistrationCacheStats s = cache.stats();
            assertEquals(1, s.hits());
            assertEquals(1, s.misses());
            assertEquals(0.5, s.hitRatio());
            assertEquals(ResourceState.OPEN, state(first), "kept for reuse");
        }
    }

    @Test
    void aRegistrationDroppedUnclosedIsReleasedByTheLeakTrackerAndCountedAsALeak() throws Exception {
        try (RegistrationCache cache = cache().maxCachedBytes(0).build()) {
            MemorySegment buf = pages(1);
            MemoryRegion region = acquireAndDrop(cache, buf);
            long deadline = System.nanoTime() + 10_000_000_000L;
            // The tracker's thread counts the leak, then deregisters: wait for both.
            while ((cache.stats().leaks() == 0 || state(region) != ResourceState.DESTROYED)
                    && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(20);
            }
            RegistrationCacheStats s = cache.stats();
            assertEquals(1, s.leaks(), "the tracker released it");
            assertEquals(0, s.inUseCount());
            assertEquals(ResourceState.DESTROYED, state(region), "unpinned: nothing may cache it (0 bytes)");
        }
    }

    /** In a method of its own, so that no local variable of the caller keeps the registration reachable. */
    private static MemoryRegion acquireAndDrop(RegistrationCache cache, MemorySegment buf) {
        return cache.acquire(buf).region();
    }

    @Test
    void aMissOverlappingACachedRegionMergesWithIt() {
        try (RegistrationCache cache = cache().build()) {
            MemorySegment buf = pages(4);
            Registration whole = cache.acquire(buf.asSlice(0, 3 * PAGE));
            Registration inside = cache.acquire(buf.asSlice(PAGE + 10, PAGE));
            assertSame(whole.region(), inside.region(), "inside a larger region: a hit");
            assertEquals(PAGE + 10, inside.offset());

            Registration beyond = cache.acquire(buf.asSlice(2 * PAGE, PAGE + 1));
            MemoryRegion old = whole.region();
            MemoryRegion merged = beyond.region();
            assertEquals(buf.address(), merged.address(), "joined with the region it overlaps");
            assertEquals(4 * PAGE, merged.length());
            assertEquals(2 * PAGE, beyond.offset());
            assertEquals(ResourceState.OPEN, state(old), "its holders go on using it, handle and all");
            assertEquals(new CacheStatsSnapshot(1, 2, 1, 0, 0, 0, 0, 0, 2, 7 * PAGE), cache.stats());

            try (Registration again = cache.acquire(buf.asSlice(10, 10))) {
                assertSame(merged, again.region(), "the old region is handed out no more");
            }
            whole.close();
            assertEquals(ResourceState.OPEN, state(old), "inside still holds it");
            inside.close();
            assertEquals(ResourceState.DESTROYED, state(old), "deregistered with its last registration");
            beyond.close();
            assertEquals(new CacheStatsSnapshot(2, 2, 1, 0, 0, 0, 1, 4 * PAGE, 0, 0), cache.stats());
        }
    }

    @Test
    void aRefusedMergeFallsBackToThePagesAlone() {
        try (RegistrationCache cache = cache().build()) {
            MemorySegment buf = pages(3);
            // The soft provider's memlock limit: room for the held region and the pages alone, not for a merge.
            System.setProperty(SOFT_MEMLOCK, String.valueOf(4 * PAGE));
            try (Registration held = cache.acquire(buf.asSlice(0, 2 * PAGE));
                 Registration next = cache.acquire(buf.asSlice(PAGE, 2 * PAGE))) {
                assertEquals(buf.address() + PAGE, next.region().address(), "the joined [0, 3) was refused");
                assertEquals(2 * PAGE, next.region().length());
                try (Registration again = cache.acquire(buf.asSlice(0, PAGE))) {
                    assertSame(held.region(), again.region(), "the region it would have joined stays cached");
                }
            } finally {
                System.clearProperty(SOFT_MEMLOCK);
            }
            RegistrationCacheStats s = cache.stats();
            assertEquals(0, s.merges());
            assertEquals(2, s.misses());
            assertEquals(2, s.cachedCount());
        }
    }

    @Test
    void invalidateReachesRegionsAMergeRetiredWhileInUse() {
        try (RegistrationCache cache = cache().build()) {
            MemorySegment buf = pages(4);
            Registration whole = cache.acquire(buf.asSlice(0, 3 * PAGE));
            Registration beyond = cache.acquire(buf.asSlice(2 * PAGE, 2 * PAGE)); // merged: whole's region retires
            MemoryRegion old = whole.region();
            MemoryRegion merged = beyond.region();
            assertNotSame(old, merged);

            assertEquals(2, cache.invalidate(buf.asSlice(0, 10)), "both still reach the freed page");
            assertEquals(ResourceState.CLOSING, state(old), "its handle closes: no new work request names it");
            assertEquals(ResourceState.CLOSING, state(merged));
            whole.close();
            beyond.close();
            assertEquals(ResourceState.DESTROYED, state(old));
            assertEquals(ResourceState.DESTROYED, state(merged));
            assertEquals(new CacheStatsSnapshot(0, 2, 1, 0, 2, 0, 0, 0, 0, 0), cache.stats());
        }
    }

    @Test
    void adjacentRegionsAndRegionsWithRemoteRightsAreNotMerged() {
        try (RegistrationCache cache = cache().build()) {
            MemorySegment buf = pages(2);
            try (Registration a = cache.acquire(buf.asSlice(0, PAGE));
                 Registration b = cache.acquire(buf.asSlice(PAGE, PAGE))) {
                assertEquals(PAGE, b.region().length(), "adjacent: a pool of neighbouring buffers stays apart");
                assertNotSame(a.region(), b.region());
            }
            try (Registration r1 = cache.acquire(buf.asSlice(0, PAGE), READABLE);
                 Registration r2 = cache.acquire(buf, READABLE)) {
                assertNotSame(r1.region(), r2.region());
                assertEquals(ResourceState.OPEN, state(r1.region()));
            }
            RegistrationCacheStats s = cache.stats();
            assertEquals(0, s.merges(), "an rkey given to a peer never grows to reach more memory");
            assertEquals(4, s.cachedCount());
        }
    }

    @Test
    void aRegionLackingARequestedRightIsAMiss() {
        try (RegistrationCache cache = cache().build()) {
            MemorySegment buf = pages(1);
            try (Registration local = cache.acquire(buf);
                 Registration readable = cache.acquire(buf, READABLE)) {
                assertNotSame(local.region(), readable.region());
                assertEquals(READABLE, readable.region().access());
                assertEquals(readable.region().rkey(), readable.rkey());
            }
            try (Registration again = cache.acquire(buf, READABLE)) {
                assertEquals(READABLE, again.region().access());
            }
            try (Registration local = cache.acquire(buf, LOCAL)) {
                assertTrue(local.region().access().containsAll(LOCAL), "any region with the rights serves it");
            }
            assertEquals(2, cache.stats().hits());
            assertEquals(2, cache.stats().misses());
            var e = assertThrows(IllegalArgumentException.class,
                    () -> cache.acquire(buf, EnumSet.of(Access.REMOTE_WRITE)));
            assertTrue(e.getMessage().contains("LOCAL_WRITE"), e.getMessage());
        }
    }

    @Test
    void theByteBoundEvictsTheLeastRecentlyUsedUnusedRegions() {
        try (RegistrationCache cache = lru().maxCachedBytes(2 * PAGE).build()) {
            MemorySegment buf = pages(8);
            Registration held = cache.acquire(buf.asSlice(0, 3 * PAGE)); // larger than the bound, but in use
            List<MemoryRegion> released = new ArrayList<>();
            for (int i = 4; i < 8; i++) {
                try (Registration reg = cache.acquire(buf.asSlice(i * PAGE, PAGE))) {
                    released.add(reg.region());
                }
                assertTrue(cache.stats().cachedBytes() <= 2 * PAGE, "within the byte bound");
            }
            assertEquals(ResourceState.OPEN, state(held.region()), "in use: never evicted");
            assertEquals(List.of(ResourceState.DESTROYED, ResourceState.DESTROYED, ResourceState.OPEN,
                    ResourceState.OPEN), released.stream().map(RegistrationCacheTest::state).toList(), "oldest first");
            assertEquals(new CacheStatsSnapshot(0, 5, 0, 2, 0, 0, 2, 2 * PAGE, 1, 3 * PAGE), cache.stats());

            MemoryRegion big = held.region();
            held.close();
            assertEquals(ResourceState.DESTROYED, state(big), "alone it exceeds the bound: evicted when released");
            assertTrue(cache.stats().cachedBytes() <= 2 * PAGE, cache.stats()::toString);
        }
    }

    /**
     * A storage engine's hot buffers, then a scan through many buffers used once, with a hot buffer read between
     * every ten: the frequency policy keeps the hot regions registered, the LRU policy loses them to the scan.
     */
    @ParameterizedTest
    @EnumSource(EvictionPolicy.class)
    void aScanEvictsTheHotRegionsOnlyUnderLru(EvictionPolicy policy) {
        int hot = 4;
        try (RegistrationCache cache = cache().eviction(policy).maxCachedCount(8).build()) {
            MemorySegment buf = pages(64);
            for (int use = 0; use < 30; use++) {
                for (int i = 0; i <= hot; i++) cache.acquire(buf.asSlice(i * PAGE, PAGE)).close(); // and one filler
                // Caffeine records reads in a lossy buffer its maintenance drains: a burst past it on a loaded machine
                // counts fewer uses (3 hot misses seen). A pause between rounds, as an engine's hot set has, is a drain.
                cache.settleEvictions();
            }
            long hotMisses = 0;
            for (int i = hot + 1; i < 64; i++) {
                cache.acquire(buf.asSlice(i * PAGE, PAGE)).close();
                if (i % 10 == 0) {
                    long before = cache.stats().misses();
                    cache.acquire(buf.asSlice((i / 10 % hot) * PAGE, PAGE)).close();
                    hotMisses += cache.stats().misses() - before;
                }
            }
            cache.settleEvictions();
            assertTrue(cache.stats().cachedCount() <= 8, cache.stats()::toString);
            long before = cache.stats().misses();
            for (int i = 0; i < hot; i++) cache.acquire(buf.asSlice(i * PAGE, PAGE)).close();
            hotMisses += cache.stats().misses() - before;
            if (policy == EvictionPolicy.FREQUENCY) {
                assertEquals(0, hotMisses, "the hot regions stay registered through the scan");
            } else {
                assertEquals(9, hotMisses, "the six hot reads during the scan and three of the four after it (the "
                        + "last one read during the scan is still cached) register again");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(EvictionPolicy.class)
    void aRegionInUseIsNeverEvictedAndFallsUnderTheBoundsOnceReleased(EvictionPolicy policy) {
        try (RegistrationCache cache = cache().eviction(policy).maxCachedCount(2).build()) {
            MemorySegment buf = pages(16);
            Registration held = cache.acquire(buf.asSlice(0, PAGE));
            for (int i = 1; i < 16; i++) cache.acquire(buf.asSlice(i * PAGE, PAGE)).close();
            cache.settleEvictions();
            assertEquals(ResourceState.OPEN, state(held.region()), "in use");
            // LRU keeps exactly the bound; Caffeine may count the region in use against it while it holds it.
            long cached = cache.stats().cachedCount();
            assertTrue(policy == EvictionPolicy.FREQUENCY ? cached <= 2 : cached == 2, cache.stats()::toString);
            held.close();
            for (int i = 0; i < 16; i++) cache.acquire(buf.asSlice(i * PAGE, PAGE)).close(); // hot and over the bound
            cache.settleEvictions();
            RegistrationCacheStats s = cache.stats();
            assertTrue(s.cachedCount() <= 2 && s.inUseCount() == 0, s::toString);
            assertEquals(s.misses() - s.cachedCount(), mrDestroys.size(), "every other region is deregistered");
        }
    }

    @Test
    void theCountBoundEvictsTheLeastRecentlyUsedUnusedRegions() {
        try (RegistrationCache cache = lru().maxCachedCount(2).build()) {
            MemorySegment buf = pages(8);
            cache.acquire(buf.asSlice(0, PAGE)).close();
            Registration held = cache.acquire(buf.asSlice(0, PAGE)); // a hit: in use again
            List<MemoryRegion> released = new ArrayList<>();
            for (int i = 1; i < 6; i++) {
                try (Registration reg = cache.acquire(buf.asSlice(i * PAGE, PAGE))) {
                    released.add(reg.region());
                }
                assertTrue(cache.stats().cachedCount() <= 2, "within the count bound");
            }
            assertEquals(ResourceState.OPEN, state(held.region()));
            assertEquals(List.of(ResourceState.DESTROYED, ResourceState.DESTROYED, ResourceState.DESTROYED,
                    ResourceState.OPEN, ResourceState.OPEN), released.stream().map(RegistrationCacheTest::state).toList());
            assertEquals(new CacheStatsSnapshot(1, 6, 0, 3, 0, 0, 2, 2 * PAGE, 1, PAGE), cache.stats());
            MemoryRegion recent = held.region();
            held.close();
            assertEquals(ResourceState.DESTROYED, state(released.get(3)), "the least recently used goes");
            assertEquals(ResourceState.OPEN, state(recent), "used more recently than the one evicted");
            assertEquals(2, cache.stats().cachedCount());
            assertEquals(4, cache.stats().evictions());
        }
    }

    @Test
    void invalidateDeregistersUnusedRegionsBeforeItReturns() {
        try (RegistrationCache cache = cache().build()) {
            MemorySegment buf = pages(3);
            MemoryRegion first;
            MemoryRegion other;
            try (Registration a = cache.acquire(buf.asSlice(0, PAGE));
                 Registration b = cache.acquire(buf.asSlice(2 * PAGE, PAGE))) {
                first = a.region();
                other = b.region();
            }
            assertEquals(0, cache.invalidate(buf.asSlice(10, 20)), "nothing in use");
            assertEquals(ResourceState.DESTROYED, state(first));
            assertEquals(ResourceState.OPEN, state(other), "a page the freed memory does not touch");
            try (Registration again = cache.acquire(buf.asSlice(0, PAGE))) {
                assertNotSame(first, again.region());
            }
            assertEquals(new CacheStatsSnapshot(0, 3, 0, 0, 1, 0, 2, 2 * PAGE, 0, 0), cache.stats());
        }
    }

    @Test
    void invalidateRetiresRegionsInUseWhenTheirLastRegistrationCloses() {
        try (RegistrationCache cache = cache().build()) {
            MemorySegment buf = pages(2);
            Registration a = cache.acquire(buf);
            Registration b = cache.acquire(buf.asSlice(PAGE, 10));
            MemoryRegion region = a.region();
            int lkey = region.lkey();
            assertSame(region, b.region());

            assertEquals(1, cache.invalidate(buf.asSlice(PAGE, PAGE)));
            assertEquals(ResourceState.CLOSING, state(region), "still registered: it is in use");
            assertEquals(lkey, a.lkey(), "its holders still know its keys");
            try (Registration c = cache.acquire(buf)) {
                assertNotSame(region, c.region(), "never handed out again");
            }
            a.close();
            assertEquals(ResourceState.CLOSING, state(region), "b still uses it");
            b.close();
            assertEquals(ResourceState.DESTROYED, state(region));
            assertEquals(new CacheStatsSnapshot(1, 2, 0, 0, 1, 0, 1, 2 * PAGE, 0, 0), cache.stats());
        }
    }

    /** Starts {@code task} on a platform or a virtual thread. */
    private static Thread start(boolean virtual, Runnable task) {
        return (virtual ? Thread.ofVirtual() : Thread.ofPlatform()).start(task);
    }

    @ParameterizedTest(name = "virtual threads: {0}")
    @ValueSource(booleans = {false, true})
    void concurrentMissesOnTheSamePagesMakeOneRegistration(boolean virtual) throws Exception {
        int threads = 8;
        MemorySegment buf = pages(2);
        try (RegistrationCache cache = cache().build()) {
            slowRegistration = new CountDownLatch(1);
            List<AtomicReference<Registration>> got = new ArrayList<>();
            List<Thread> started = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                var out = new AtomicReference<Registration>();
                got.add(out);
                long offset = t * 1000L;
                started.add(start(virtual, () -> out.set(cache.acquire(buf.asSlice(offset, 2 * PAGE - offset)))));
                if (t == 0) slowRegistrationStarted.await(); // the first miss is in ibv_reg_mr
            }
            // The others must wait for it rather than register the same pages again (or finish on their own).
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (!started.subList(1, threads).stream().allMatch(
                    t -> t.getState() == Thread.State.WAITING || t.getState() == Thread.State.TERMINATED)) {
                if (System.nanoTime() > deadline) fail("the other misses neither wait nor end");
                Thread.onSpinWait();
            }
            slowRegistration.countDown();
            for (Thread t : started) t.join();
            MemoryRegion region = got.getFirst().get().region();
            for (var reg : got) {
                assertSame(region, reg.get().region());
                reg.get().close();
            }
            assertEquals(1, mrsCreated.get(), "one registration");
            RegistrationCacheStats s = cache.stats();
            assertEquals(1, s.misses());
            assertEquals(threads - 1, s.hits());
        }
    }

    @ParameterizedTest(name = "virtual threads: {0}")
    @ValueSource(booleans = {false, true})
    void hitsWhileAnotherThreadInvalidatesNeverGetADeregisteredRegion(boolean virtual) throws Exception {
        int threads = 4;
        int opsPerThread = 3000;
        MemorySegment buf = pages(4);
        AtomicLong acquires = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        try (RegistrationCache cache = cache().build()) {
            List<Thread> hitters = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                var random = new Random(17 + t);
                hitters.add(start(virtual, () -> {
                    try {
                        for (int i = 0; i < opsPerThread; i++) {
                            long offset = random.nextLong(3 * PAGE);
                            try (Registration reg = cache.acquire(buf.asSlice(offset, 1 + random.nextLong(PAGE)))) {
                                acquires.incrementAndGet();
                                assertNotEquals(ResourceState.DESTROYED, state(reg.region()), "handed out deregistered");
                                if (i % 8 == 0) Thread.yield();
                                assertNotEquals(ResourceState.DESTROYED, state(reg.region()), "deregistered in use");
                            }
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }));
            }
            int invalidations = 0;
            while (hitters.stream().anyMatch(Thread::isAlive)) {
                cache.invalidate(buf.asSlice(PAGE * (invalidations % 4), PAGE));
                invalidations++;
                Thread.yield();
            }
            for (Thread t : hitters) t.join();
            if (failure.get() != null) throw new AssertionError(failure.get());
            RegistrationCacheStats s = cache.stats();
            assertEquals(acquires.get(), s.hits() + s.misses());
            assertTrue(s.hits() > 0 && s.invalidations() > 0, s::toString);
            assertEquals(0, s.inUseCount(), s::toString);
            assertEquals(s.misses(), mrsCreated.get(), "one region per miss");
        }
    }

    @Test
    void closingTheCacheDefersRegionsInUseUntilReleased() {
        RegistrationCache cache = cache().build();
        MemorySegment buf = pages(2);
        Registration held = cache.acquire(buf.asSlice(0, 8));
        MemoryRegion inUse = held.region();
        MemoryRegion unused;
        try (Registration reg = cache.acquire(buf.asSlice(PAGE, 8))) {
            unused = reg.region();
        }
        cache.close();
        assertEquals(ResourceState.DESTROYED, state(unused));
        assertEquals(ResourceState.CLOSING, state(inUse));
        assertEquals(ResourceState.CLOSING, cache.resource().state(), "waits for its last region");
        assertThrows(ResourceClosedException.class, () -> cache.acquire(buf));
        assertEquals(inUse.address(), held.segment().address() - held.offset(), "the holder can still use it");
        assertNotEquals(0, held.lkey());
        held.close();
        assertEquals(ResourceState.DESTROYED, state(inUse));
        assertEquals(ResourceState.DESTROYED, cache.resource().state());
        cache.close(); // idempotent
    }

    @Test
    void closingThePdsTreeRetiresTheCacheToo() {
        RegistrationCache cache = cache().build();
        MemorySegment buf = pages(1);
        MemoryRegion region;
        try (Registration reg = cache.acquire(buf)) {
            region = reg.region();
        }
        fx.pd.resource().closeTree();
        assertEquals(ResourceState.DESTROYED, state(region));
        assertThrows(ResourceClosedException.class, () -> cache.acquire(buf));
        cache.close();
    }

    @Test
    void aStrictGraphRefusesToCloseTheCacheWhileRegistrationsAreOpen() {
        try (var strict = new PdFixture(ClosePolicy.STRICT)) {
            RegistrationCache cache = RegistrationCache.builder(strict.pd).build();
            Registration reg = cache.acquire(pages(1));
            var e = assertThrows(ResourceBusyException.class, cache::close);
            assertTrue(e.getMessage().contains("STRICT"), e.getMessage());
            assertEquals(cache.resource().info().name(), e.resource().name());
            assertEquals(List.of(reg.region().resource().info().name()),
                    e.liveChildren().stream().map(ResourceInfo::name).toList(), "the region of the open registration");
            assertEquals(ResourceState.OPEN, reg.region().resource().state());
            reg.close();
            cache.close();
            assertEquals(ResourceState.DESTROYED, cache.resource().state());
        }
    }

    /**
     * Under STRICT a region whose registration was closed while a posted request still named it waits for that
     * request: the cache's close refused with the graph's ResourceBusyException (its region is a child), but had
     * marked the cache closed first, so every later close returned at once and the cache's place in the graph never
     * closed. A later close now closes it once the request completed.
     */
    @Test
    void underStrictACloseRefusedForAPostedRequestSucceedsOnceItCompleted() throws Exception {
        try (var strict = new PdFixture(ClosePolicy.STRICT)) {
            CompletionQueue cq = strict.context.createCompletionQueue(4);
            QueuePair a = strict.pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
            QueuePair b = strict.pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
            a.connect(b.info());
            b.connect(a.info());
            RegistrationCache cache = RegistrationCache.builder(strict.pd).build();
            MemorySegment buf = pages(1);
            try (Registration reg = cache.acquire(buf)) {
                b.post(ReceiveRequest.into(reg.region(), reg.offset(), 64));
            } // closed before its receive completed
            assertThrows(ResourceBusyException.class, cache::close);
            assertThrows(ResourceClosedException.class, () -> cache.acquire(buf), "closed for acquiring");
            b.moveToError();
            WorkCompletion[] wc = {new WorkCompletion()};
            assertEquals(1, cq.poll(wc, Duration.ofSeconds(10)));
            cache.close();
            assertEquals(ResourceState.DESTROYED, cache.resource().state());
            a.close();
            b.close();
            cq.close();
        }
    }

    /** A closed registration refuses every use, a second close too, with the typed exception naming it. */
    @Test
    void useAfterCloseAndASecondCloseThrowResourceClosedAndReleaseNothingTwice() {
        try (RegistrationCache cache = cache().build()) {
            MemorySegment buf = pages(1);
            Registration a = cache.acquire(buf);
            Registration b = cache.acquire(buf);
            a.close();
            var e = assertThrows(ResourceClosedException.class, a::close);
            assertTrue(e.getMessage().startsWith("Registration[") && e.getMessage().contains("already closed"),
                    e.getMessage());
            for (Executable use : List.<Executable>of(a::region, a::segment, a::offset, a::lkey, a::rkey)) {
                var closed = assertThrows(ResourceClosedException.class, use);
                String message = closed.getMessage();
                assertTrue(message.startsWith("Registration[") && message.endsWith(" is closed"), message);
            }
            assertEquals(1, cache.stats().inUseCount(), "b still holds the region");
            assertEquals(1, b.region().resource().info().pins(), "one pin of the MR while the region is pinned");
            b.close();
            assertEquals(0, cache.stats().inUseCount());
            assertEquals(1, cache.stats().cachedCount());
        }
    }

    @Test
    void heapAndEmptySegmentsAreRefused() {
        try (RegistrationCache cache = cache().build()) {
            var heap = assertThrows(IllegalArgumentException.class, () -> cache.acquire(MemorySegment.ofArray(new byte[64])));
            assertTrue(heap.getMessage().contains("heap segment"), heap.getMessage());
            assertThrows(IllegalArgumentException.class, () -> cache.invalidate(MemorySegment.ofArray(new long[8])));
            var empty = assertThrows(IllegalArgumentException.class, () -> cache.acquire(pages(1).asSlice(0, 0)));
            assertTrue(empty.getMessage().contains("empty"), empty.getMessage());
            var bytes = assertThrows(IllegalArgumentException.class, () -> cache().maxCachedBytes(-1));
            assertTrue(bytes.getMessage().contains("-1"), bytes.getMessage());
            assertThrows(IllegalArgumentException.class, () -> cache().maxCachedCount(-2));
            assertThrows(IllegalArgumentException.class, () -> cache().access(EnumSet.of(Access.REMOTE_ATOMIC)));
        }
    }

    @Test
    void lengthsAndOffsetsAre64Bit(@TempDir Path dir) throws Exception {
        long size = 3L << 30; // a sparse file, mapped and never touched: costs no memory
        try (FileChannel file = FileChannel.open(dir.resolve("sparse"), StandardOpenOption.CREATE_NEW,
                StandardOpenOption.READ, StandardOpenOption.WRITE, StandardOpenOption.SPARSE);
             Arena mapping = Arena.ofShared();
             RegistrationCache cache = cache().build()) {
            MemorySegment all = file.map(FileChannel.MapMode.READ_WRITE, 0, size, mapping);
            try (Registration whole = cache.acquire(all);
                 Registration tail = cache.acquire(all.asSlice(size - PAGE / 2, 16))) {
                assertEquals(size, whole.region().length());
                assertSame(whole.region(), tail.region());
                assertEquals(size - PAGE / 2, tail.offset());
                assertEquals(size, cache.stats().inUseBytes());
            }
            cache.settleEvictions();
            assertEquals(1, cache.stats().evictions(), "3 GiB alone exceeds the default 256 MiB bound");
        }
    }

    @ParameterizedTest
    @EnumSource(EvictionPolicy.class)
    void concurrentAcquiresAndReleasesDeregisterEveryRegionExactlyOnce(EvictionPolicy policy) throws Exception {
        int threads = 4;
        int opsPerThread = 2000;
        MemorySegment buf = pages(32);
        RegistrationCache cache = cache().eviction(policy).maxCachedBytes(8 * PAGE).maxCachedCount(6).build();
        AtomicLong acquires = new AtomicLong();
        var begin = new CyclicBarrier(threads);
        ThreadFactory factory = Thread.ofVirtual().factory();
        try (var pool = Executors.newFixedThreadPool(threads, factory)) {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                var random = new Random(31 + t);
                done.add(pool.submit(() -> {
                    begin.await();
                    ArrayDeque<Registration> held = new ArrayDeque<>();
                    for (int i = 0; i < opsPerThread; i++) {
                        long offset = random.nextLong(31 * PAGE);
                        long length = Math.min(1 + random.nextLong(3 * PAGE), buf.byteSize() - offset);
                        Set<Access> rights = random.nextInt(4) == 0 ? READABLE : LOCAL;
                        MemorySegment slice = buf.asSlice(offset, length);
                        Registration reg = cache.acquire(slice, rights);
                        acquires.incrementAndGet();
                        MemoryRegion r = reg.region();
                        assertNotEquals(ResourceState.DESTROYED, state(r), "deregistered while in use");
                        assertTrue(r.address() <= slice.address()
                                && slice.address() + length <= r.address() + r.length(), "covers the slice");
                        assertTrue(r.access().containsAll(rights), "has the rights");
                        held.addLast(reg);
                        if (held.size() > 3 || random.nextBoolean()) held.removeFirst().close();
                        if (random.nextInt(64) == 0) cache.invalidate(buf.asSlice(random.nextLong(31 * PAGE), PAGE));
                    }
                    held.forEach(Registration::close);
                    return null;
                }));
            }
            for (Future<?> f : done) f.get();
        }
        cache.settleEvictions();
        RegistrationCacheStats s = cache.stats();
        assertEquals(acquires.get(), s.hits() + s.misses());
        assertTrue(s.hits() > 0 && s.merges() > 0 && s.evictions() > 0 && s.invalidations() > 0, s::toString);
        assertEquals(0, s.inUseCount());
        assertTrue(s.cachedCount() <= 6 && s.cachedBytes() <= 8 * PAGE, s::toString);
        assertEquals(s.misses(), mrsCreated.get(), "one region per miss");
        assertEquals(s.misses() - s.cachedCount(), mrDestroys.size(), "all but the cached ones are gone");

        cache.close();
        assertEquals(mrsCreated.get(), mrDestroys.size());
        assertEquals(ResourceState.DESTROYED, cache.resource().state());
    }
}
