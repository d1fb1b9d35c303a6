package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.netty.buffer.ByteBuf;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The allocator under concurrency, platform and virtual threads alike: buffers allocated and released on one thread,
 * released on another, shared by views across threads. Each test ends with every block back in the arena.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class ConcurrentBuffersTest {
    private static final int THREADS = 8;
    private static final int[] SIZES = {1, 64, 100, 4096, 20_000};
    private BufferFixture f;

    @AfterEach
    void close() throws InterruptedException {
        if (f != null) f.close();
    }

    /** Runs {@code task} on THREADS platform and THREADS virtual threads at once; rethrows the first failure. */
    private static void onManyThreads(Callable<Void> task) throws Exception {
        try (ExecutorService platform = Executors.newFixedThreadPool(THREADS);
             ExecutorService virtual = Executors.newVirtualThreadPerTaskExecutor()) {
            var futures = new ArrayList<Future<Void>>();
            for (int t = 0; t < THREADS; t++) {
                futures.add(platform.submit(task));
                futures.add(virtual.submit(task));
            }
            for (Future<Void> fu : futures) fu.get(90, TimeUnit.SECONDS);
        }
    }

    /** A buffer's bytes say which buffer it is: the stamp at every 8th byte. */
    private static ByteBuf stamped(ByteBuf buf, long stamp) {
        while (buf.writableBytes() >= 8) buf.writeLong(stamp);
        return buf;
    }

    /** Checks that every stamp of {@code buf} is its first (a buffer under 8 bytes has none). */
    private static void checkStamps(ByteBuf buf) {
        for (int i = 0; i + 8 <= buf.writerIndex(); i += 8) {
            long stamp = buf.getLong(0);
            if (buf.getLong(i) != stamp) throw new AssertionError(buf + " at " + i + ": " + buf.getLong(i) + " != " + stamp);
        }
    }

    @ParameterizedTest
    @EnumSource(ReleasePattern.class)
    void manyThreadsAllocateWriteGrowAndRelease(ReleasePattern releases) throws Exception {
        f = new BufferFixture(releases);
        var stamps = new AtomicInteger();
        onManyThreads(() -> {
            var held = new ArrayList<ByteBuf>();
            var random = ThreadLocalRandom.current();
            for (int i = 0; i < 2_000; i++) {
                int size = SIZES[random.nextInt(SIZES.length)];
                long stamp = stamps.incrementAndGet();
                ByteBuf buf = stamped(f.allocator.directBuffer(size, 1 << 16), stamp);
                if (random.nextInt(8) == 0) {
                    buf.capacity(Math.min(1 << 16, size * 3)); // growth moves the bytes
                    stamped(buf, stamp);
                }
                held.add(buf);
                if (held.size() > 16) {
                    ByteBuf old = held.remove(random.nextInt(held.size()));
                    checkStamps(old); // a live buffer's bytes are still its own
                    assertTrue(old.release());
                }
            }
            for (ByteBuf buf : held) buf.release();
            return null;
        });
    }

    @ParameterizedTest
    @EnumSource(ReleasePattern.class)
    void buffersReleasedOnOtherThreadsComeBack(ReleasePattern releases) throws Exception {
        f = new BufferFixture(releases);
        BlockingQueue<ByteBuf> queue = new ArrayBlockingQueue<>(256); // bounded: producers wait for the consumers
        int perProducer = 5_000;
        var producersDone = new CountDownLatch(THREADS);
        try (ExecutorService platform = Executors.newFixedThreadPool(THREADS);
             ExecutorService virtual = Executors.newVirtualThreadPerTaskExecutor()) {
            var futures = new ArrayList<Future<?>>();
            var stamps = new AtomicInteger();
            for (int t = 0; t < THREADS; t++) {
                ExecutorService producerSide = t % 2 == 0 ? platform : virtual;
                futures.add(producerSide.submit(() -> {
                    for (int i = 0; i < perProducer; i++) {
                        long stamp = stamps.incrementAndGet();
                        queue.put(stamped(f.allocator.directBuffer(SIZES[i % SIZES.length]), stamp));
                    }
                    producersDone.countDown();
                    return null;
                }));
                ExecutorService consumerSide = t % 2 == 0 ? virtual : platform;
                futures.add(consumerSide.submit(() -> {
                    while (producersDone.getCount() > 0 || !queue.isEmpty()) {
                        ByteBuf buf = queue.poll(10, TimeUnit.MILLISECONDS);
                        if (buf == null) continue;
                        checkStamps(buf);
                        assertTrue(buf.release());
                    }
                    return null;
                }));
            }
            for (Future<?> fu : futures) fu.get(90, TimeUnit.SECONDS);
        }
        f.awaitAllBlocksBack(); // the producers' threads are gone: the arena's collector takes what they owned
    }

    @ParameterizedTest
    @EnumSource(ReleasePattern.class)
    void viewsReleasedConcurrentlyFreeTheBlockExactlyOnce(ReleasePattern releases) throws Exception {
        f = new BufferFixture(releases);
        int rounds = 2_000;
        try (ExecutorService pool = Executors.newFixedThreadPool(4)) {
            for (int r = 0; r < rounds; r++) {
                ByteBuf buf = stamped(f.allocator.directBuffer(64), r);
                List<ByteBuf> views = List.of(buf.retainedSlice(), buf.retainedDuplicate(), buf.retainedSlice(8, 8));
                var start = new CountDownLatch(1);
                var released = new ArrayList<Future<Boolean>>();
                long stamp = r;
                for (ByteBuf view : views) {
                    released.add(pool.submit(() -> {
                        start.await();
                        assertEquals(stamp, view.getLong(0));
                        return view.release();
                    }));
                }
                start.countDown();
                boolean last = buf.release();
                int lasts = last ? 1 : 0;
                for (Future<Boolean> fu : released) lasts += fu.get(10, TimeUnit.SECONDS) ? 1 : 0;
                assertEquals(1, lasts, "exactly one release is the last");
                assertEquals(0, buf.refCnt());
            }
        }
        f.awaitAllBlocksBack();
    }

    @Test
    void releasedElsewhereABlockIsFreeAtOnceNotLeftForItsOwner() throws Exception {
        f = new BufferFixture(ReleasePattern.OTHER_THREADS);
        ByteBuf buf = f.allocator.directBuffer(64);
        Thread releaser = Thread.ofPlatform().start(buf::release);
        releaser.join();
        // Under SAME_THREAD this is an mt free, uncollected until this thread (its owner) or the collector takes it.
        assertEquals(0, f.arena.stats().uncollectedFrees());
        assertEquals(0, f.arena.stats().liveBlocks());
    }

    @Test
    void retainsAndReleasesRaceWithoutLosingACount() throws Exception {
        f = new BufferFixture();
        ByteBuf buf = f.allocator.directBuffer(8);
        onManyThreads(() -> {
            for (int i = 0; i < 10_000; i++) {
                buf.retain();
                assertFalse(buf.release());
            }
            return null;
        });
        assertEquals(1, buf.refCnt());
        assertTrue(buf.release());
    }
}
