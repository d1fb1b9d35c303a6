package io.mooring.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ClosePolicy;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceState;
import io.mooring.verbs.Errno;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.values.Access;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class RdmaArenaTest {
    private final ArenaFixture fx = new ArenaFixture();

    @AfterEach
    void teardown() {
        fx.close();
    }

    /**
     * Closing the graph tears the arena down without its close(): its chunks are unmapped, and the fast path, whose
     * cache still holds their regions, must refuse to serve them (the arena's check, not a SIGSEGV on the write).
     */
    @Test
    void anArenaTornDownWithItsGraphServesNothingFromTheCache() {
        RdmaArena arena = fx.arena().build();
        arena.allocate(64).close(); // the cache now holds regions of the chunk
        fx.graph.close();
        assertThrows(ResourceClosedException.class, () -> arena.allocate(64));
    }

    @Test
    void blocksHaveTheirSizeAlignmentAndKeysAndNeverOverlap() {
        try (RdmaArena arena = fx.arena().build()) {
            var random = new Random(7);
            TreeMap<Long, Block> live = new TreeMap<>();
            for (int i = 0; i < 3000; i++) {
                long size = 1 + random.nextInt(random.nextBoolean() ? 256 : 100_000);
                long alignment = 1L << random.nextInt(13);
                Block b = arena.allocate(size, alignment);
                assertEquals(size, b.segment().byteSize());
                assertEquals(0, b.address() % alignment, () -> b + " not aligned to " + alignment);
                var region = b.region();
                assertTrue(b.address() >= region.address() && b.address() + size <= region.address() + region.length(),
                        () -> b + " outside its region");
                assertEquals(region.lkey(), b.lkey());
                var before = live.floorEntry(b.address());
                var after = live.ceilingEntry(b.address());
                if (before != null) assertTrue(before.getKey() + before.getValue().size() <= b.address(), "overlap");
                if (after != null) assertTrue(b.address() + size <= after.getKey(), "overlap");
                live.put(b.address(), b);
                if (random.nextInt(3) == 0) live.pollFirstEntry().getValue().close();
            }
            live.values().forEach(Block::close);
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    @Test
    void aLayoutGivesItsSizeAndAlignment() {
        try (RdmaArena arena = fx.arena().build();
             Block b = arena.allocate(MemoryLayout.sequenceLayout(3, ValueLayout.JAVA_LONG).withByteAlignment(64))) {
            assertEquals(24, b.size());
            assertEquals(0, b.address() % 64);
        }
    }

    @Test
    void oneGibOfFourKibBlocksCostsSixteenRegistrations() {
        try (RdmaArena arena = RdmaArena.builder(fx.pd).chunkSize(64 << 20).shards(1).checked(false).build()) {
            List<Block> blocks = new ArrayList<>();
            for (int i = 0; i < (1 << 30) / 4096; i++) blocks.add(arena.allocate(4096));
            ArenaStats s = arena.stats();
            assertEquals(16, s.registrations(), "registrations for 262,144 blocks");
            assertEquals(1L << 30, s.registeredBytes());
            assertEquals(1.0, s.overhead(), 1e-9);
            blocks.forEach(Block::close);
        }
    }

    @Test
    void aSecondCloseThrowsAndCorruptsNothing() {
        try (RdmaArena arena = fx.arena().build()) {
            Block a = arena.allocate(64);
            a.close();
            var e = assertThrows(ResourceClosedException.class, a::close);
            assertTrue(e.getMessage().contains("already closed"), e.getMessage());
            Block b = arena.allocate(64);
            Block c = arena.allocate(64);
            assertNotEquals(b.address(), c.address(), "a double free would hand the region out twice");
            assertEquals(1, arena.stats().classes().get(SizeClasses.indexOf(64)).frees());
            b.close();
            c.close();
        }
    }

    @Test
    void aClosedCheckedBlockCannotBeTouched() {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(64);
            var segment = b.segment();
            segment.set(ValueLayout.JAVA_LONG, 0, 42);
            b.close();
            assertThrows(IllegalStateException.class, () -> segment.get(ValueLayout.JAVA_LONG, 0));
            assertThrows(ResourceClosedException.class, b::segment);
            assertThrows(ResourceClosedException.class, b::lkey);
        }
    }

    @Test
    void anUncheckedBlockStaysAddressableButTheBlockRefusesUse() {
        try (RdmaArena arena = fx.arena().checked(false).build()) {
            Block b = arena.allocate(64);
            var segment = b.segment();
            b.close();
            segment.get(ValueLayout.JAVA_LONG, 0); // the price of unchecked mode: no fault
            assertThrows(ResourceClosedException.class, b::segment);
        }
    }

    /** Once its owner made its segment, only the owner can close the scope: nobody else may collect the block. */
    @Test
    void aConfinedBlockClosedElsewhereStaysUncollectedUntilItsOwnerComesBack() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(64);
            b.segment().set(ValueLayout.JAVA_LONG, 0, 1);
            Thread closer = Thread.ofVirtual().start(b::close);
            closer.join();
            assertFalse(b.isOpen());
            assertEquals(1, arena.stats().uncollectedFrees());
            assertEquals(1, arena.stats().classes().get(SizeClasses.indexOf(64)).live(), "not reused yet");
            assertThrows(ResourceClosedException.class, b::segment);
            try (Block next = arena.allocate(64)) { // the owner's next call collects it
                assertEquals(0, arena.stats().uncollectedFrees());
                assertEquals(b.address(), next.address(), "the region is reused only now");
            }
        }
    }

    @Test
    void blocksOfADeadThreadClosedElsewhereAreReleased() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            AtomicReference<Block> made = new AtomicReference<>();
            Thread owner = Thread.ofPlatform().start(() -> made.set(arena.allocate(128)));
            owner.join();
            made.get().close(); // the owner is gone: nobody can reach its confined segment
            assertEquals(0, arena.stats().uncollectedFrees());
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    @Test
    void sharedBlocksWorkAcrossThreads() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocateShared(64, 8);
            var segment = b.segment();
            Thread writer = Thread.ofVirtual().start(() -> segment.set(ValueLayout.JAVA_LONG, 0, 7));
            writer.join();
            assertEquals(7, segment.get(ValueLayout.JAVA_LONG, 0));
            Thread closer = Thread.ofVirtual().start(b::close);
            closer.join();
            assertThrows(IllegalStateException.class, () -> segment.get(ValueLayout.JAVA_LONG, 0), "dead at once");
            assertEquals(0, arena.stats().uncollectedFrees(), "freed by the closer, not left for its owner to collect");
            assertEquals(0, arena.stats().liveBlocks());
            assertThrows(ResourceClosedException.class, b::close);
        }
    }

    /** Collected by the owner's next call, or by the collector if it comes first (the owner is between calls). */
    @Test
    void anUncheckedBlockClosedElsewhereIsFreedOnce() throws Exception {
        try (RdmaArena arena = fx.arena().checked(false).build()) {
            Block b = arena.allocate(64);
            Thread closer = Thread.ofVirtual().start(b::close);
            closer.join();
            assertThrows(ResourceClosedException.class, b::close, "a second close, by the owner, is refused");
            arena.purge();
            assertEquals(0, arena.stats().uncollectedFrees());
            assertEquals(0, arena.stats().liveBlocks());
            Set<Long> addresses = new HashSet<>();
            List<Block> next = new ArrayList<>();
            for (int i = 0; i < 200; i++) {
                next.add(arena.allocate(64));
                assertTrue(addresses.add(next.getLast().address()), "a region freed twice is handed out twice");
            }
            next.forEach(Block::close);
        }
    }

    /**
     * The interleaving a racing double close can produce, made deterministic: the other thread's CAS succeeded and
     * pushed the block onto the owner's mt-free list, then the owner (which had read OPEN just before) closed and
     * freed it locally too.
     */
    @Test
    void anMtFreeAfterTheOwnersLocalFreeIsNotFreedAgain() {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(64);
            b.close();
            arena.collector.freeMt(b); // as the racing thread would, had its CAS come first
            arena.purge(); // the owner's call, or the collector before it, finds it closed by its owner
            assertEquals(0, arena.stats().uncollectedFrees());
            Block first = arena.allocate(64);
            Block second = arena.allocate(64);
            assertNotEquals(first.address(), second.address(), "the region went back to the cache once");
            first.close();
            second.close();
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    /** The owner closes without an atomic; a racing close from another thread must still never free twice. */
    @Test
    void racingClosesByOwnerAndAnotherThreadFreeEachBlockOnce() throws Exception {
        for (boolean checked : new boolean[] {true, false}) {
            try (RdmaArena arena = fx.arena().checked(checked).build()) {
                int rounds = 2_000;
                Block[] blocks = new Block[rounds];
                CyclicBarrier start = new CyclicBarrier(2);
                AtomicInteger refused = new AtomicInteger();
                var other = new SynchronousQueue<Block>();
                Thread closer = Thread.ofPlatform().start(() -> {
                    try {
                        for (int i = 0; i < rounds; i++) {
                            Block b = other.take();
                            start.await();
                            try {
                                b.close();
                            } catch (ResourceClosedException e) {
                                refused.incrementAndGet();
                            }
                        }
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                });
                for (int i = 0; i < rounds; i++) {
                    blocks[i] = arena.allocate(64);
                    other.put(blocks[i]);
                    start.await();
                    try {
                        blocks[i].close();
                    } catch (ResourceClosedException e) {
                        refused.incrementAndGet();
                    }
                }
                closer.join();
                arena.flushThreadCaches();
                ArenaStats s = arena.stats();
                assertEquals(0, s.liveBlocks(), "every block freed: " + s);
                assertTrue(refused.get() <= rounds, "at most one refusal per block");
                // Had any region been freed twice it would now be handed out twice.
                Set<Long> addresses = new HashSet<>();
                List<Block> live = new ArrayList<>();
                for (int i = 0; i < 4 * rounds; i++) {
                    Block b = arena.allocate(64);
                    live.add(b);
                    assertTrue(addresses.add(b.address()), "0x" + Long.toHexString(b.address()) + " handed out twice");
                }
                live.forEach(Block::close);
            }
        }
    }

    @Test
    void hugeBlocksGetAChunkOfTheirOwnAndGiveItBack() {
        try (RdmaArena arena = fx.arena().build()) {
            long before = arena.stats().registrations();
            Block huge = arena.allocate(3 << 20, 1 << 20);
            ArenaStats s = arena.stats();
            assertEquals(before + 1, s.registrations());
            assertEquals(1, s.hugeAllocations());
            assertEquals(0, huge.address() % (1 << 20));
            huge.segment().set(ValueLayout.JAVA_BYTE, (3 << 20) - 1, (byte) 1);
            huge.close();
            assertEquals(s.deregistrations() + 1, arena.stats().deregistrations());
        }
    }

    @Test
    void purgeReleasesFreeChunksBeyondTheRetainedAmount() {
        try (RdmaArena arena = fx.arena().hugeThreshold(900 << 10).retainedBytes(1 << 20).decay(Duration.ofHours(1))
                .build()) {
            List<Block> blocks = new ArrayList<>();
            for (int i = 0; i < 3; i++) blocks.add(arena.allocate(600 << 10)); // one large block per 1 MiB chunk
            assertEquals(3, arena.stats().chunks());
            blocks.forEach(Block::close);
            assertEquals(3 << 20, arena.stats().retainedBytes(), "the decay has not passed");
            arena.purge();
            ArenaStats s = arena.stats();
            assertEquals(1, s.chunks(), "one chunk retained");
            assertEquals(2, s.deregistrations());
        }
    }

    @Test
    void theDecayTimerReleasesChunksThatStayFree() throws Exception {
        try (RdmaArena arena = fx.arena().hugeThreshold(900 << 10).decay(Duration.ofMillis(200)).build()) {
            arena.allocate(600 << 10).close();
            assertEquals(1, arena.stats().chunks(), "a large block's chunk outlives it until the decay");
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (arena.stats().chunks() > 0 && System.nanoTime() < deadline) Thread.sleep(10);
            assertEquals(0, arena.stats().chunks());
            assertEquals(0, arena.stats().registeredBytes());
        }
    }

    @Test
    void badRequestsAreRefusedNamingTheValue() {
        try (RdmaArena arena = fx.arena().build()) {
            var zero = assertThrows(IllegalArgumentException.class, () -> arena.allocate(0));
            assertTrue(zero.getMessage().contains("was 0"), zero.getMessage());
            var odd = assertThrows(IllegalArgumentException.class, () -> arena.allocate(64, 24));
            assertTrue(odd.getMessage().contains("power of two, was 24"), odd.getMessage());
            var big = assertThrows(IllegalArgumentException.class, () -> arena.allocate(64, 2 << 20));
            assertTrue(big.getMessage().contains("exceeds the chunk size"), big.getMessage());
            var oom = assertThrows(OutOfMemoryError.class, () -> arena.allocate(1L << 50));
            assertTrue(oom.getMessage().contains("mmap"), oom.getMessage());
            try (Block _ = arena.allocate(64)) { // the arena is still usable and leaked nothing
                assertEquals(1, arena.stats().liveBlocks());
            }
        }
        assertThrows(IllegalArgumentException.class, () -> fx.arena().chunkSize(3 << 20));
        assertThrows(IllegalArgumentException.class, () -> fx.arena().shards(0));
    }

    /**
     * A request below the huge threshold is cut from a chunk as a page run, so a threshold above the chunk size left
     * requests that fit no chunk: the arena mapped a new chunk anyway and handed out a block a page before it, outside
     * every registered region. Such a threshold is refused, whichever setting comes first; up to the chunk size, every
     * large request lies inside its region.
     */
    @Test
    void aHugeThresholdAboveTheChunkSizeIsRefused() {
        var above = assertThrows(IllegalArgumentException.class, () -> fx.arena().hugeThreshold(2 << 20).build());
        assertTrue(above.getMessage().contains("exceeds the chunk size"), above.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> RdmaArena.builder(fx.pd).hugeThreshold(4 << 20).chunkSize(1 << 20).build());
        try (RdmaArena arena = fx.arena().hugeThreshold(1 << 20).build();
             Block b = arena.allocate((1 << 20) - 1, 1 << 20)) {
            assertEquals(0, arena.stats().hugeAllocations(), "a page run, not a chunk of its own");
            assertTrue(b.regionOffset() >= 0 && b.regionOffset() + b.size() <= b.region().length(),
                    () -> b + " lies outside " + b.region());
        }
    }

    /** The locked-memory limit (played by the soft provider) refuses a new chunk: typed, hinted, nothing leaked. */
    @Test
    void aRefusedRegistrationLeavesTheArenaUsableAndLeaksNothing() {
        try (RdmaArena arena = fx.arena().build()) {
            Block first = arena.allocate(256 << 10); // a page run of the first 1 MiB chunk
            int resources = fx.graph.liveCount();
            // Room for the chunk registered (1 MiB) and half of another: the next chunk must be refused.
            System.setProperty("mooring.soft.memlock", String.valueOf(3 << 19));
            try {
                VerbsException refused = assertThrows(VerbsException.class, () -> arena.allocate(768 << 10));
                assertEquals(Errno.ENOMEM.number(), refused.errno());
                assertTrue(refused.getMessage().contains("ulimit -l"), refused.getMessage());
                assertEquals(resources, fx.graph.liveCount(), "no mapping or region left behind");
                assertEquals(1, arena.stats().registrations());
                try (Block small = arena.allocate(64)) { // the arena goes on serving from what it has
                    assertTrue(small.address() >= first.region().address());
                }
            } finally {
                System.clearProperty("mooring.soft.memlock");
            }
            arena.allocate(768 << 10).close(); // and registers again (a huge block here) once the limit allows
            first.close();
            assertEquals(2, arena.stats().registrations());
        }
    }

    @Test
    void blocksCarryTheArenasRemoteRights() {
        try (RdmaArena local = fx.arena().build();
             RdmaArena remote = fx.arena().access(EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE)).build();
             Block l = local.allocate(64);
             Block r = remote.allocate(64)) {
            assertThrows(IllegalStateException.class, l::rkey);
            assertEquals(r.region().rkey(), r.rkey());
        }
    }

    @Test
    void deferredCloseReleasesChunksWithTheirLastBlock() {
        RdmaArena arena = fx.arena().build();
        Block small = arena.allocate(64);
        Block large = arena.allocate(100 << 10);
        arena.close();
        assertThrows(ResourceClosedException.class, () -> arena.allocate(64));
        assertEquals(ResourceState.CLOSING, arena.resource().state());
        small.close();
        assertTrue(arena.stats().chunks() >= 1);
        large.close();
        assertEquals(0, arena.stats().chunks());
        assertEquals(ResourceState.DESTROYED, arena.resource().state());
    }

    @Test
    void strictCloseRefusesWhileBlocksLive() {
        try (var strict = new ArenaFixture(ClosePolicy.STRICT)) {
            RdmaArena arena = strict.arena().build();
            Block a = arena.allocate(64);
            Block b = arena.allocate(64);
            var e = assertThrows(ArenaBusyException.class, arena::close);
            assertTrue(e.getMessage().contains("2 × 64 B"), e.getMessage());
            assertEquals(2, e.stats().liveBlocks());
            a.close();
            b.close();
            arena.close();
            assertEquals(ResourceState.DESTROYED, arena.resource().state());
        }
    }

    @Test
    void statsCountPerClass() {
        try (RdmaArena arena = fx.arena().build()) {
            Set<Block> blocks = new HashSet<>();
            for (int i = 0; i < 10; i++) blocks.add(arena.allocate(100));
            blocks.add(arena.allocate(50 << 10));
            ArenaStats s = arena.stats();
            var c112 = s.classes().get(SizeClasses.indexOf(100));
            assertEquals(112, c112.size());
            assertEquals(10, c112.allocations());
            assertEquals(10, c112.live());
            assertEquals(1, c112.slabs());
            assertEquals(1, s.largeAllocations());
            assertEquals(10 * 112 + (56 << 10), s.activeBytes());
            blocks.forEach(Block::close);
            assertEquals(0, arena.stats().activeBytes());
        }
    }
}
