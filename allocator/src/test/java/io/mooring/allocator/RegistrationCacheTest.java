package io.mooring.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ClosePolicy;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceInfo;
import io.mooring.lifecycle.ResourceListener;
import io.mooring.lifecycle.ResourceState;
import io.mooring.verbs.Access;
import io.mooring.verbs.MemoryRegion;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Future;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class RegistrationCacheTest {
    private static final long KERNEL_PAGE = NativeMemory.KERNEL_PAGE; // registrations cover whole kernel pages
    private static final Set<Access> LOCAL = EnumSet.of(Access.LOCAL_WRITE);
    private static final Set<Access> READABLE = EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_READ);

    /** Counts native destroys of memory regions per resource id. */
    private final Map<Long, AtomicInteger> mrDestroys = new ConcurrentHashMap<>();
    private final AtomicInteger mrsCreated = new AtomicInteger();
    private final ArenaFixture fx = new ArenaFixture(ClosePolicy.DEFERRED, new ResourceListener() {
        @Override
        public void created(ResourceInfo r) {
            if (r.kind().equals("mr")) mrsCreated.incrementAndGet();
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

    private MemorySegment pages(int n) {
        return memory.allocate(n * KERNEL_PAGE, KERNEL_PAGE);
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
                assertEquals(KERNEL_PAGE, first.length(), "one page");
                assertEquals(100, reg.offset());
                assertEquals(first.lkey(), reg.lkey());
                assertEquals(buf.address() + 100, reg.segment().address());
            }
            try (Registration reg = cache.acquire(buf.asSlice(1000, 8))) {
                assertSame(first, reg.region());
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
    void aRegistrationDroppedUnclosedIsReleasedByItsCleanerAndCountedAsALeak() throws Exception {
        try (RegistrationCache cache = cache().maxCachedBytes(0).build()) {
            MemorySegment buf = pages(1);
            MemoryRegion region = acquireAndDrop(cache, buf);
            long deadline = System.nanoTime() + 10_000_000_000L;
            // The Cleaner's thread counts the leak, then deregisters: wait for both.
            while ((cache.stats().leaks() == 0 || state(region) != ResourceState.DESTROYED)
                    && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(20);
            }
            RegistrationCacheStats s = cache.stats();
            assertEquals(1, s.leaks(), "the Cleaner released it");
            assertEquals(0, s.inUseCount());
            assertEquals(ResourceState.DESTROYED, state(region), "unpinned: nothing may cache it (0 bytes)");
        }
    }

    /** In a method of its own, so that no local variable of the caller keeps the registration reachable. */
    private static MemoryRegion acquireAndDrop(RegistrationCache cache, MemorySegment buf) {
        return cache.acquire(buf).region();
    }

    @Test
    void aRangeInsideALargerCachedRegionIsAHitAndOneReachingOutIsAMiss() {
        try (RegistrationCache cache = cache().build()) {
            MemorySegment buf = pages(4);
            try (Registration whole = cache.acquire(buf.asSlice(0, 3 * KERNEL_PAGE));
                 Registration inside = cache.acquire(buf.asSlice(KERNEL_PAGE + 10, KERNEL_PAGE));
                 Registration beyond = cache.acquire(buf.asSlice(2 * KERNEL_PAGE, KERNEL_PAGE + 1))) {
                assertSame(whole.region(), inside.region());
                assertEquals(KERNEL_PAGE + 10, inside.offset());
                assertNotSame(whole.region(), beyond.region());
                assertEquals(buf.address() + 2 * KERNEL_PAGE, beyond.region().address());
                assertEquals(2 * KERNEL_PAGE, beyond.region().length());
                assertEquals(2, cache.stats().inUseCount(), "two regions serve three registrations");
            }
            assertEquals(new RegistrationCacheStats(1, 2, 0, 0, 0, 2, 5 * KERNEL_PAGE, 0, 0), cache.stats());
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
    void theByteBoundEvictsOnlyUnusedRegions() {
        try (RegistrationCache cache = cache().maxCachedBytes(2 * KERNEL_PAGE).build()) {
            MemorySegment buf = pages(8);
            Registration held = cache.acquire(buf.asSlice(0, 3 * KERNEL_PAGE)); // larger than the bound, but in use
            List<MemoryRegion> released = new ArrayList<>();
            for (int i = 4; i < 8; i++) {
                try (Registration reg = cache.acquire(buf.asSlice(i * KERNEL_PAGE, KERNEL_PAGE))) {
                    released.add(reg.region());
                }
                assertTrue(cache.stats().cachedBytes() <= 2 * KERNEL_PAGE, "within the byte bound");
            }
            assertEquals(ResourceState.OPEN, state(held.region()), "in use: never evicted");
            assertEquals(2, released.stream().filter(r -> state(r) == ResourceState.DESTROYED).count());
            assertEquals(2, released.stream().filter(r -> state(r) == ResourceState.OPEN).count());
            assertEquals(new RegistrationCacheStats(0, 5, 2, 0, 0, 2, 2 * KERNEL_PAGE, 1, 3 * KERNEL_PAGE), cache.stats());

            MemoryRegion big = held.region();
            held.close();
            assertEquals(ResourceState.DESTROYED, state(big), "alone it exceeds the bound: evicted when released");
            assertEquals(3, cache.stats().evictions());
        }
    }

    @Test
    void theCountBoundEvictsOnlyUnusedRegions() {
        try (RegistrationCache cache = cache().maxCachedCount(2).build()) {
            MemorySegment buf = pages(8);
            cache.acquire(buf.asSlice(0, KERNEL_PAGE)).close();
            Registration held = cache.acquire(buf.asSlice(0, KERNEL_PAGE)); // a hit: taken back out of the LRU
            List<MemoryRegion> released = new ArrayList<>();
            for (int i = 1; i < 6; i++) {
                try (Registration reg = cache.acquire(buf.asSlice(i * KERNEL_PAGE, 2 * KERNEL_PAGE))) {
                    released.add(reg.region());
                }
                assertTrue(cache.stats().cachedCount() <= 2, "within the count bound");
            }
            assertEquals(ResourceState.OPEN, state(held.region()));
            assertEquals(3, released.stream().filter(r -> state(r) == ResourceState.DESTROYED).count());
            assertEquals(new RegistrationCacheStats(1, 6, 3, 0, 0, 2, 4 * KERNEL_PAGE, 1, KERNEL_PAGE), cache.stats());
            held.close();
            assertEquals(2, cache.stats().cachedCount());
            assertEquals(4, cache.stats().evictions());
        }
    }

    @Test
    void invalidateDeregistersUnusedRegionsAtOnce() {
        try (RegistrationCache cache = cache().build()) {
            MemorySegment buf = pages(3);
            MemoryRegion first;
            MemoryRegion other;
            try (Registration a = cache.acquire(buf.asSlice(0, KERNEL_PAGE));
                 Registration b = cache.acquire(buf.asSlice(2 * KERNEL_PAGE, KERNEL_PAGE))) {
                first = a.region();
                other = b.region();
            }
            assertEquals(0, cache.invalidate(buf.asSlice(10, 20)), "nothing in use");
            assertEquals(ResourceState.DESTROYED, state(first));
            assertEquals(ResourceState.OPEN, state(other), "a page the freed memory does not touch");
            try (Registration again = cache.acquire(buf.asSlice(0, KERNEL_PAGE))) {
                assertNotSame(first, again.region());
            }
            assertEquals(new RegistrationCacheStats(0, 3, 0, 1, 0, 2, 2 * KERNEL_PAGE, 0, 0), cache.stats());
        }
    }

    @Test
    void invalidateRetiresRegionsInUseWhenTheirLastRegistrationCloses() {
        try (RegistrationCache cache = cache().build()) {
            MemorySegment buf = pages(2);
            Registration a = cache.acquire(buf);
            Registration b = cache.acquire(buf.asSlice(KERNEL_PAGE, 10));
            MemoryRegion region = a.region();
            int lkey = region.lkey();
            assertSame(region, b.region());

            assertEquals(1, cache.invalidate(buf.asSlice(KERNEL_PAGE, KERNEL_PAGE)));
            assertEquals(ResourceState.CLOSING, state(region), "still registered: it is in use");
            assertEquals(lkey, a.lkey(), "its holders still know its keys");
            try (Registration c = cache.acquire(buf)) {
                assertNotSame(region, c.region(), "never handed out again");
            }
            a.close();
            assertEquals(ResourceState.CLOSING, state(region), "b still uses it");
            b.close();
            assertEquals(ResourceState.DESTROYED, state(region));
            RegistrationCacheStats s = cache.stats();
            assertEquals(1, s.invalidations());
            assertEquals(1, s.cachedCount(), "only the new region is cached");
            assertEquals(0, s.inUseCount());
        }
    }

    @Test
    void closingTheCacheDefersRegionsInUseUntilReleased() {
        RegistrationCache cache = cache().build();
        MemorySegment buf = pages(2);
        Registration held = cache.acquire(buf.asSlice(0, 8));
        MemoryRegion inUse = held.region();
        MemoryRegion unused;
        try (Registration reg = cache.acquire(buf.asSlice(KERNEL_PAGE, 8))) {
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
        try (var strict = new ArenaFixture(ClosePolicy.STRICT)) {
            RegistrationCache cache = RegistrationCache.builder(strict.pd).build();
            Registration reg = cache.acquire(pages(1));
            var e = assertThrows(IllegalStateException.class, cache::close);
            assertTrue(e.getMessage().contains("STRICT"), e.getMessage());
            assertEquals(ResourceState.OPEN, reg.region().resource().state());
            reg.close();
            cache.close();
            assertEquals(ResourceState.DESTROYED, cache.resource().state());
        }
    }

    @Test
    void aSecondCloseThrowsAndReleasesNothingTwice() {
        try (RegistrationCache cache = cache().build()) {
            MemorySegment buf = pages(1);
            Registration a = cache.acquire(buf);
            Registration b = cache.acquire(buf);
            a.close();
            var e = assertThrows(IllegalStateException.class, a::close);
            assertTrue(e.getMessage().contains("already closed"), e.getMessage());
            assertThrows(IllegalStateException.class, a::region);
            assertEquals(1, cache.stats().inUseCount(), "b still holds the region");
            assertEquals(1, b.region().resource().info().pins());
            b.close();
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
            assertThrows(IllegalArgumentException.class, () -> cache().maxCachedBytes(-1));
            assertThrows(IllegalArgumentException.class, () -> cache().access(EnumSet.of(Access.REMOTE_ATOMIC)));
        }
    }

    @Test
    void lengthsAndOffsetsAre64Bit() {
        long size = 3L << 30; // mapped with MAP_NORESERVE and never touched: costs no memory
        long base = NativeMemory.map(size, SizeClasses.PAGE_SIZE, false);
        try (RegistrationCache cache = cache().build()) {
            MemorySegment all = NativeMemory.segment(base, size, null);
            try (Registration whole = cache.acquire(all);
                 Registration tail = cache.acquire(all.asSlice(size - KERNEL_PAGE / 2, 16))) {
                assertEquals(size, whole.region().length());
                assertSame(whole.region(), tail.region());
                assertEquals(size - KERNEL_PAGE / 2, tail.offset());
                assertEquals(size, cache.stats().inUseBytes());
            }
            assertEquals(1, cache.stats().evictions(), "3 GiB alone exceeds the default 256 MiB bound");
        } finally {
            NativeMemory.unmap(base, size);
        }
    }

    @Test
    void concurrentAcquiresAndReleasesDeregisterEveryRegionExactlyOnce() throws Exception {
        int threads = 4;
        int opsPerThread = 2000;
        MemorySegment buf = pages(32);
        RegistrationCache cache = cache().maxCachedBytes(8 * KERNEL_PAGE).maxCachedCount(6).build();
        AtomicLong acquires = new AtomicLong();
        var start = new CyclicBarrier(threads);
        try (var pool = Executors.newFixedThreadPool(threads)) {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                var random = new Random(31 + t);
                done.add(pool.submit(() -> {
                    start.await();
                    ArrayDeque<Registration> held = new ArrayDeque<>();
                    for (int i = 0; i < opsPerThread; i++) {
                        long offset = random.nextLong(31 * KERNEL_PAGE);
                        long length = Math.min(1 + random.nextLong(3 * KERNEL_PAGE), buf.byteSize() - offset);
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
                        if (random.nextInt(64) == 0) cache.invalidate(buf.asSlice(random.nextLong(31 * KERNEL_PAGE), KERNEL_PAGE));
                    }
                    held.forEach(Registration::close);
                    return null;
                }));
            }
            for (Future<?> f : done) f.get();
        }
        RegistrationCacheStats s = cache.stats();
        assertEquals(acquires.get(), s.hits() + s.misses());
        assertTrue(s.hits() > 0 && s.evictions() > 0 && s.invalidations() > 0, s::toString);
        assertEquals(0, s.inUseCount());
        assertTrue(s.cachedCount() <= 6 && s.cachedBytes() <= 8 * KERNEL_PAGE, s::toString);
        assertEquals(s.misses(), mrsCreated.get(), "one region per miss");
        assertEquals(s.misses() - s.cachedCount(), mrDestroys.size(), "all but the cached ones are gone");

        cache.close();
        assertEquals(mrsCreated.get(), mrDestroys.size());
        assertEquals(ResourceState.DESTROYED, cache.resource().state());
    }
}
