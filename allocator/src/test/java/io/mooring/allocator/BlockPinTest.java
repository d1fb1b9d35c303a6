package io.mooring.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ClosePolicy;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceState;
import io.mooring.testing.CapturedLog;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Pins: a closed block's memory stays out of reuse until its last pin is released, whoever releases it. */
class BlockPinTest {
    private final ArenaFixture fx = new ArenaFixture();
    @RegisterExtension
    final CapturedLog log = new CapturedLog(BlockPin.class.getName());

    @AfterEach
    void teardown() {
        fx.close();
    }

    @Test
    void aPinnedBlockClosesAtOnceButItsMemoryWaitsForTheLastUnpin() {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(64);
            MemorySegment seg = b.segment();
            seg.set(ValueLayout.JAVA_LONG, 0, 7);
            AtomicInteger told = new AtomicInteger();
            Block.Pin pin = b.pin(told::incrementAndGet);
            b.close();
            assertFalse(b.isOpen());
            assertThrows(IllegalStateException.class, () -> seg.get(ValueLayout.JAVA_LONG, 0), "the scope is closed");
            assertThrows(ResourceClosedException.class, b::close, "a second close still throws");
            assertEquals(1, told.get(), "onClose ran once, on the closing thread");
            ArenaStats s = arena.stats();
            assertEquals(1, s.closedPinnedBlocks());
            assertEquals(1, s.liveBlocks(), "its memory is still in use");
            try (Block other = arena.allocate(64)) {
                assertNotEquals(b.address(), other.address(), "not reused while pinned");
            }
            pin.close();
            pin.close(); // idempotent
            assertEquals(0, arena.stats().closedPinnedBlocks());
            assertEquals(0, arena.stats().liveBlocks());
            assertEquals(1, told.get());
            try (Block next = arena.allocate(64)) {
                assertEquals(b.address(), next.address(), "reused once the last pin went");
            }
        }
    }

    /** A lease layer's onClose may wait for a thread that pins another of the owner's blocks meanwhile. */
    @Test
    void aPinElsewhereDoesNotWaitForAnOwnerRunningOnClose() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Block first = arena.allocate(64);
            Block second = arena.allocate(64);
            var pinnedSecond = new CountDownLatch(1);
            AtomicReference<Block.Pin> secondPin = new AtomicReference<>();
            Block.Pin firstPin = first.pin(() -> {
                Thread.ofPlatform().start(() -> {
                    secondPin.set(second.pin(null)); // waits for the owner to be between calls
                    pinnedSecond.countDown();
                });
                try {
                    assertTrue(pinnedSecond.await(20, TimeUnit.SECONDS), "the pin waited for this onClose");
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            });
            first.close();
            assertEquals(0, pinnedSecond.getCount());
            second.close();
            assertEquals(2, arena.stats().closedPinnedBlocks());
            firstPin.close();
            secondPin.get().close();
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    /**
     * Two threads pinning each other's blocks at once: each pin waits for the other block's owner to be between calls,
     * and each owner was inside the allocator — waiting in its own pin — so both waited for ever (at once, here). A
     * thread waiting for an owner in a pin does nothing to its own blocks or cache until the wait ends: it is between
     * calls.
     */
    @Test
    void threadsPinningEachOthersBlocksAtOnceDoNotWaitForEachOther() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Block[] blocks = new Block[2];
            var allocated = new CountDownLatch(2);
            AtomicInteger pins = new AtomicInteger();
            Thread[] pinners = new Thread[2];
            for (int i = 0; i < 2; i++) {
                int me = i;
                pinners[i] = Thread.ofPlatform().start(() -> {
                    blocks[me] = arena.allocate(64);
                    allocated.countDown();
                    try {
                        allocated.await();
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                    for (int n = 0; n < 2000; n++) {
                        blocks[1 - me].pin(null).close();
                        pins.incrementAndGet();
                    }
                });
            }
            for (Thread t : pinners) t.join(TimeUnit.SECONDS.toMillis(20));
            assertFalse(pinners[0].isAlive() || pinners[1].isAlive(), "pinners waiting for each other after "
                    + pins.get() + " pins");
            assertEquals(4000, pins.get());
            for (Block b : blocks) b.close(); // mt frees: the owners have ended
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    @Test
    void aPinReleasedBeforeTheCloseIsNotToldAndHoldsNothing() {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(64);
            AtomicInteger told = new AtomicInteger();
            b.pin(told::incrementAndGet).close();
            b.close();
            assertEquals(0, told.get());
            assertEquals(0, arena.stats().liveBlocks());
            assertEquals(0, arena.stats().closedPinnedBlocks());
        }
    }

    @Test
    void aPinIsRefusedOnAClosedBlockFromAnyThread() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(64);
            b.close();
            var e = assertThrows(ResourceClosedException.class, () -> b.pin(null));
            assertTrue(e.getMessage().contains("closed"), e.getMessage());
            AtomicReference<Throwable> elsewhere = new AtomicReference<>();
            Thread.ofPlatform().start(() -> elsewhere.set(assertThrows(ResourceClosedException.class,
                    () -> b.pin(null)))).join();
            assertTrue(elsewhere.get().getMessage().contains("closed"));
        }
    }

    @Test
    void theLastUnpinOnAnotherThreadFreesTheBlockWhileTheOwnerIdles() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(4096);
            b.segment().fill((byte) 1);
            Block.Pin pin = b.pin(null);
            b.close(); // by the owner: its scope is closed now, so nobody needs the owner to collect the memory
            Thread.ofPlatform().start(pin::close).join();
            ArenaFixture.awaitTrue(() -> arena.stats().liveBlocks() == 0, "collected without a call by the owner");
            assertEquals(0, arena.stats().uncollectedFrees());
            assertEquals(0, arena.stats().closedPinnedBlocks());
        }
    }

    @Test
    void aPinRefusedOnABlockWaitingOnAnMtFreeListLeavesTheListWhole() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Block first = arena.allocate(64);
            Block last = arena.allocate(64);
            Thread.ofPlatform().start(() -> {
                last.close();
                first.close(); // the list: first, then last
            }).join();
            assertThrows(ResourceClosedException.class, () -> last.pin(null));
            assertThrows(ResourceClosedException.class, () -> first.pin(null));
            arena.allocate(64).close(); // the owner's next call collects both
            assertEquals(0, arena.stats().uncollectedFrees());
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    @Test
    void aVirtualThreadPinsAndUnpinsAnotherThreadsBlock() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(256);
            var pinned = new CountDownLatch(1);
            var closed = new CountDownLatch(1);
            AtomicBoolean told = new AtomicBoolean();
            Thread v = Thread.ofVirtual().start(() -> {
                Block.Pin pin = b.pin(() -> told.set(true));
                pinned.countDown();
                await(closed);
                pin.close();
            });
            pinned.await();
            b.close();
            assertTrue(told.get());
            assertEquals(1, arena.stats().liveBlocks());
            closed.countDown();
            v.join();
            try (Block next = arena.allocate(256)) { // the owner's next call collects the unpinner's free
                assertEquals(b.address(), next.address());
            }
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    @Test
    void manyPinsFromManyThreadsAreEachToldOnceAndTheLastFreesTheBlock() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(1024);
            AtomicInteger told = new AtomicInteger();
            List<Block.Pin> pins = new ArrayList<>();
            for (int i = 0; i < 500; i++) pins.add(b.pin(told::incrementAndGet));
            List<Block.Pin> remote = new ArrayList<>();
            List<Thread> pinners = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                pinners.add(Thread.ofPlatform().start(() -> {
                    for (int i = 0; i < 25; i++) {
                        Block.Pin p = b.pin(told::incrementAndGet);
                        synchronized (remote) {
                            remote.add(p);
                        }
                    }
                }));
            }
            for (Thread t : pinners) t.join();
            for (int i = 0; i < 100; i++) pins.remove(pins.size() - 1).close(); // released before: never told
            b.close();
            assertEquals(500, told.get(), "400 of the owner's pins and 100 of the others'");
            pins.addAll(remote);
            for (Block.Pin p : pins.subList(1, pins.size())) p.close();
            assertEquals(1, arena.stats().liveBlocks(), "one pin still holds it");
            pins.get(0).close();
            assertEquals(0, arena.stats().liveBlocks());
            assertEquals(500, told.get());
        }
    }

    @Test
    void onCloseThatThrowsNeitherFailsTheCloseNorStopsTheOthers() {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocate(64);
            AtomicInteger told = new AtomicInteger();
            Block.Pin first = b.pin(told::incrementAndGet);
            Block.Pin bad = b.pin(() -> {
                throw new IllegalStateException("a lease layer's bug");
            });
            Block.Pin last = b.pin(told::incrementAndGet);
            b.close();
            assertEquals(2, told.get());
            assertEquals(1, log.entries().size());
            assertEquals("a lease layer's bug", log.entries().getFirst().thrown().getMessage());
            first.close();
            bad.close();
            last.close();
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    @Test
    void aPinHeldAcrossAPurgeKeepsTheChunkRegistered() {
        try (RdmaArena arena = fx.arena().build()) {
            Block huge = arena.allocate(600 << 10); // a chunk of its own
            Block small = arena.allocate(64);
            Block.Pin hugePin = huge.pin(null);
            Block.Pin smallPin = small.pin(null);
            huge.close();
            small.close();
            arena.flushThreadCaches();
            arena.purge();
            assertEquals(2, arena.stats().chunks(), "both chunks hold pinned memory");
            hugePin.close();
            assertEquals(1, arena.stats().chunks(), "the huge block's chunk goes with its last pin");
            smallPin.close();
            arena.flushThreadCaches();
            arena.purge();
            assertEquals(0, arena.stats().chunks());
        }
    }

    @Test
    void closingTheArenaWaitsForPinnedMemoryAndStrictCountsItLive() {
        try (var strict = new ArenaFixture(ClosePolicy.STRICT)) {
            RdmaArena arena = strict.arena().build();
            Block b = arena.allocate(64);
            Block.Pin pin = b.pin(null);
            b.close();
            var e = assertThrows(ArenaBusyException.class, arena::close);
            assertEquals(1, e.stats().liveBlocks());
            assertEquals(1, e.stats().closedPinnedBlocks());
            pin.close();
            arena.close();
            assertEquals(ResourceState.DESTROYED, arena.resource().state());
        }
        RdmaArena deferred = fx.arena().build();
        Block b = deferred.allocate(64);
        Block.Pin pin = b.pin(null);
        b.close();
        deferred.close();
        assertEquals(1, deferred.stats().chunks(), "the pinned memory keeps its chunk");
        pin.close();
        assertEquals(0, deferred.stats().chunks());
        assertEquals(ResourceState.DESTROYED, deferred.resource().state());
    }

    @Test
    void aSharedBlockClosedElsewhereWhilePinnedIsFreedByTheLastUnpin() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            Block b = arena.allocateShared(128, 8);
            MemorySegment seg = b.segment();
            Block.Pin pin = b.pin(null);
            Thread.ofPlatform().start(b::close).join();
            assertThrows(IllegalStateException.class, () -> seg.get(ValueLayout.JAVA_BYTE, 0));
            assertEquals(1, arena.stats().liveBlocks());
            Thread.ofPlatform().start(pin::close).join();
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    /**
     * The owner closes its unpinned blocks without an atomic instruction, so a pin by another thread races with it:
     * each pin must either be refused or keep the memory from reuse until it is released.
     */
    @Test
    void aPinRacingTheOwnersCloseIsRefusedOrHolds() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            AtomicReference<Block> current = new AtomicReference<>();
            Set<Long> held = ConcurrentHashMap.newKeySet();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger granted = new AtomicInteger();
            AtomicLong attempts = new AtomicLong();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread owner = Thread.ofPlatform().start(() -> {
                try {
                    for (int i = 0; i < 200_000 && !stop.get(); i++) {
                        Block b = arena.allocate(64);
                        if (held.contains(b.address())) throw new AssertionError("pinned memory reused: " + b);
                        current.set(b);
                        if (i % 1000 == 0) { // now and then, wait outside the arena for a pin on this open block
                            long seen = attempts.get();
                            while (attempts.get() < seen + 2 && !stop.get()) Thread.onSpinWait();
                        }
                        b.close();
                    }
                } catch (Throwable e) {
                    failure.set(e);
                }
            });
            Thread pinner = Thread.ofPlatform().start(() -> {
                while (owner.isAlive()) {
                    Block b = current.get();
                    if (b == null) continue;
                    try {
                        Block.Pin p = b.pin(null);
                        held.add(b.address());
                        granted.incrementAndGet();
                        Thread.onSpinWait();
                        held.remove(b.address());
                        p.close();
                    } catch (ResourceClosedException refused) {
                        // closed first: fine
                    }
                    attempts.incrementAndGet();
                }
            });
            owner.join(TimeUnit.SECONDS.toMillis(60));
            stop.set(true);
            owner.join();
            pinner.join();
            if (failure.get() != null) throw new AssertionError(failure.get());
            assertTrue(granted.get() >= 100, "a pin on each block the owner waited with: " + granted.get());
            ArenaFixture.awaitTrue(() -> arena.stats().liveBlocks() == 0, "every block freed once");
            assertEquals(0, arena.stats().closedPinnedBlocks());
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
