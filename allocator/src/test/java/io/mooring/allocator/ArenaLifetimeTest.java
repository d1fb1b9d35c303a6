package io.mooring.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceState;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What blocks, thread caches and callers leave behind across threads, thread ends and the arena's close. */
class ArenaLifetimeTest {
    private static final long GENEROUS_NANOS = TimeUnit.SECONDS.toNanos(20);

    private final ArenaFixture fx = new ArenaFixture();

    @AfterEach
    void teardown() {
        fx.close();
    }

    // ---- close -----------------------------------------------------------------------------------------------

    @Test
    void closeReleasesChunksCachedByAnIdleLiveThread() throws Exception {
        RdmaArena arena = fx.arena().build();
        try (Owner owner = new Owner()) {
            owner.run(() -> arena.allocate(64).close()); // the owner's cache keeps the regions of a refill
            assertTrue(arena.stats().cachedRegions() > 0);
            arena.close();
            assertAllReleased(arena, "the idle owner's cache was retired by close()");
        }
    }

    @Test
    void theLastBlockFreedByItsOwnerAfterCloseReleasesTheChunk() throws Exception {
        RdmaArena arena = fx.arena().build();
        try (Owner owner = new Owner()) {
            Block kept = owner.call(() -> {
                arena.allocate(64).close();
                return arena.allocate(64);
            });
            arena.close();
            assertEquals(1, arena.stats().chunks(), "the live block holds its chunk");
            owner.run(kept::close);
            assertAllReleased(arena, "the owner's free after close took its last block");
        }
    }

    @Test
    void aBlockClosedElsewhereAfterCloseIsCollectedWhileItsOwnerIdles() throws Exception {
        RdmaArena arena = fx.arena().build();
        try (Owner owner = new Owner()) {
            Block posted = owner.call(() -> arena.allocate(4096)); // never touched through a segment
            arena.close();
            onAnotherThread(posted::close);
            ArenaFixture.awaitTrue(() -> arena.stats().chunks() == 0, "the chunk released without a call by the owner");
            assertAllReleased(arena, "");
        }
    }

    @Test
    void aBlockWhoseOwnerOpenedItsSegmentWaitsForTheOwnersNextCall() throws Exception {
        RdmaArena arena = fx.arena().build();
        try (Owner owner = new Owner()) {
            Block written = owner.call(() -> {
                Block b = arena.allocate(64);
                b.segment().fill((byte) 1); // a confined scope only its owner can close
                return b;
            });
            onAnotherThread(written::close);
            arena.purge();
            assertEquals(1, arena.stats().uncollectedFrees(), "the owner could still write through its segment");
            arena.close();
            assertEquals(1, arena.stats().chunks());
            owner.run(() -> assertThrows(ResourceClosedException.class, () -> arena.allocate(64)));
            assertEquals(0, arena.stats().uncollectedFrees(), "the owner's call closed the scope and freed the block");
            assertAllReleased(arena, "");
        }
    }

    // ---- blocks closed by other threads ----------------------------------------------------------------------

    @Test
    void blocksClosedElsewhereAreCollectedByAPurgeWhileTheirOwnerIdles() throws Exception {
        for (boolean checked : new boolean[] {true, false}) {
            try (RdmaArena arena = fx.arena().checked(checked).build(); Owner owner = new Owner()) {
                List<Block> blocks = owner.call(() -> allocateMany(arena));
                onAnotherThread(() -> blocks.forEach(Block::close));
                arena.purge();
                ArenaStats s = arena.stats();
                assertEquals(0, s.uncollectedFrees(), "collected although the owner never called again");
                assertEquals(0, s.liveBlocks());
                assertTrue(s.chunks() <= 1, "the purge released the freed blocks' chunks (one may hold regions the "
                        + "owner's cache keeps): " + s);
            }
        }
    }

    @Test
    void blocksClosedElsewhereAreCollectedWithoutAnyCallWhileTheirOwnerIdles() throws Exception {
        try (RdmaArena arena = fx.arena().build(); Owner owner = new Owner()) {
            List<Block> blocks = owner.call(() -> allocateMany(arena));
            onAnotherThread(() -> blocks.forEach(Block::close));
            ArenaFixture.awaitTrue(() -> arena.stats().uncollectedFrees() == 0, "mt frees collected by the arena's collector");
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    // ---- per-thread state ------------------------------------------------------------------------------------

    /** Through the magazines too: nothing the arena keeps reaches a finished virtual thread. */
    @Test
    void finishedVirtualThreadsAreNotRetained() throws Exception {
        try (RdmaArena arena = fx.arena().shards(2).build()) {
            List<WeakReference<Thread>> finished = new ArrayList<>();
            try (var executor = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int i = 0; i < 100_000; i++) {
                    executor.submit(() -> {
                        synchronized (finished) {
                            finished.add(new WeakReference<>(Thread.currentThread()));
                        }
                        try (Block b = arena.allocate(64)) {
                            b.segment().fill((byte) 1);
                        }
                    });
                }
            }
            assertTrue(arena.stats().cacheHits() > 0, "served by the magazines");
            ArenaFixture.awaitTrue(() -> {
                arena.purge(); // a collector pass: it empties the thread slots that ended threads held
                System.gc();
                return finished.stream().allMatch(r -> r.get() == null);
            }, "every finished virtual thread collected");
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    @Test
    void finishedVirtualThreadsLeaveNoStateBehind() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            try (var executor = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int i = 0; i < 100_000; i++) executor.submit(() -> arena.allocate(64).close());
            }
            assertEquals(0, arena.threadStates(), "per-thread state kept for finished virtual threads");
            List<Block> mtFreed = new ArrayList<>();
            Queue<Thread> owners = new ConcurrentLinkedQueue<>();
            try (var executor = Executors.newVirtualThreadPerTaskExecutor()) {
                List<java.util.concurrent.Future<Block>> made = new ArrayList<>();
                for (int i = 0; i < 1000; i++) {
                    made.add(executor.submit(() -> {
                        owners.add(Thread.currentThread());
                        return arena.allocate(64);
                    }));
                }
                for (var f : made) mtFreed.add(f.get());
            }
            for (Thread t : owners) t.join(); // the executor's close waits for the tasks, not for their threads' end
            mtFreed.forEach(Block::close); // closed by another thread than their (finished) owners
            assertEquals(0, arena.threadStates(), "per-thread state kept for the blocks' finished owners");
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    @Test
    void closedArenasAreNotKeptReachableByTheThreadThatUsedThem() throws Exception {
        List<WeakReference<RdmaArena>> closed = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            RdmaArena arena = fx.arena().build();
            arena.allocate(64).close();
            arena.allocate(4096).close();
            arena.close();
            closed.add(new WeakReference<>(arena));
        }
        long reachable = closed.size();
        for (int attempt = 0; attempt < 50 && reachable > 0; attempt++) {
            System.gc();
            reachable = closed.stream().filter(r -> r.get() != null).count();
        }
        assertEquals(0, reachable, "closed arenas still reachable after 50 collections");
    }

    // ---- stats -----------------------------------------------------------------------------------------------

    /**
     * Workers each hold at most one block at a time, so no snapshot may count more live blocks than workers. The
     * 16 KiB-aligned large block is taken from the shard and freed into the thread cache: counted by both.
     */
    @Test
    void statsNeverCountMoreLiveBlocksThanThereAre() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            AtomicBoolean stop = new AtomicBoolean();
            List<Thread> workers = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                workers.add(Thread.ofPlatform().start(() -> {
                    while (!stop.get()) {
                        arena.allocate(64).close();
                        arena.allocate(20_000, 16 << 10).close();
                    }
                }));
            }
            workers.add(Thread.ofVirtual().start(() -> {
                while (!stop.get()) arena.allocate(256).close();
            }));
            long worst = 0;
            try {
                for (int i = 0; i < 5_000; i++) worst = Math.max(worst, arena.stats().liveBlocks());
            } finally {
                stop.set(true);
                for (Thread w : workers) w.join();
            }
            assertTrue(worst <= workers.size(), "a snapshot counted " + worst + " live blocks; at most "
                    + workers.size() + " were");
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    /**
     * Blocks allocated on one thread and freed on another are counted by different caches: a snapshot that reads the
     * allocations and then the frees can see more frees than allocations. It may count fewer live blocks than there
     * are, never fewer than none (it reported -1233 while blocks were handed off).
     */
    @Test
    void statsNeverCountFewerThanNoLiveBlocks() throws Exception {
        try (RdmaArena arena = fx.arena().build()) {
            AtomicBoolean stop = new AtomicBoolean();
            var handed = new ArrayBlockingQueue<Block>(1024);
            Thread producer = Thread.ofPlatform().start(() -> {
                try {
                    while (!stop.get()) {
                        for (long size : new long[] {64, 20_000}) {
                            Block b = arena.allocate(size);
                            b.handOff();
                            if (!handed.offer(b, 10, TimeUnit.MILLISECONDS)) b.close();
                        }
                    }
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            });
            Thread consumer = Thread.ofPlatform().start(() -> {
                try {
                    while (!stop.get()) {
                        Block b = handed.poll(10, TimeUnit.MILLISECONDS);
                        if (b != null) b.close();
                    }
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            });
            long lowest = 0;
            try {
                for (int i = 0; i < 5_000; i++) {
                    ArenaStats s = arena.stats();
                    lowest = Math.min(lowest, s.liveBlocks());
                    for (ArenaStats.ClassStats c : s.classes()) lowest = Math.min(lowest, c.live());
                }
            } finally {
                stop.set(true);
                producer.join();
                consumer.join();
                handed.forEach(Block::close);
            }
            assertEquals(0, lowest, "the lowest live count a snapshot gave");
            assertEquals(0, arena.stats().liveBlocks());
        }
    }

    // ---- helpers ---------------------------------------------------------------------------------------------

    /** 1000 × 4 KiB, never touched through a segment (posted only, as receive buffers are). */
    private static List<Block> allocateMany(RdmaArena arena) {
        List<Block> made = new ArrayList<>();
        for (int i = 0; i < 1000; i++) made.add(arena.allocate(4096));
        return made;
    }

    private static void onAnotherThread(Runnable action) throws InterruptedException {
        Thread.ofPlatform().start(action).join();
    }

    private static void assertAllReleased(RdmaArena arena, String why) {
        ArenaStats s = arena.stats();
        assertEquals(0, s.chunks(), () -> why + ": " + s);
        assertEquals(0, s.registeredBytes());
        assertEquals(ResourceState.DESTROYED, arena.resource().state());
    }

    /** A platform thread that runs the steps it is given and otherwise waits, idle and alive, outside the arena. */
    private static final class Owner implements AutoCloseable {
        private final LinkedBlockingQueue<Runnable> steps = new LinkedBlockingQueue<>();
        private final Thread thread = Thread.ofPlatform().name("owner").start(() -> {
            try {
                for (Runnable step = steps.take(); step != STOP; step = steps.take()) step.run();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        private static final Runnable STOP = () -> {};

        void run(Runnable step) throws Exception {
            call(() -> {
                step.run();
                return null;
            });
        }

        <T> T call(Callable<T> step) throws Exception {
            var result = new CompletableFuture<T>();
            steps.add(() -> {
                try {
                    result.complete(step.call());
                } catch (Throwable e) {
                    result.completeExceptionally(e);
                }
            });
            return result.get(GENEROUS_NANOS, TimeUnit.NANOSECONDS);
        }

        @Override
        public void close() {
            steps.add(STOP);
            boolean interrupted = false;
            while (true) {
                try {
                    thread.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true; // keep waiting: the owner must be gone before the test goes on
                }
            }
            if (interrupted) Thread.currentThread().interrupt();
        }
    }
}
