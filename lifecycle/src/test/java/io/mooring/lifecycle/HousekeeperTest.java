package io.mooring.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.ReferenceQueue;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;

/** The one background thread: delayed and periodic work, and cleanups of unreachable objects. */
class HousekeeperTest {
    private static final Housekeeper HOUSEKEEPER = Housekeeper.shared();

    @Test
    void delayedWorkRunsOnceOnTheHousekeepersThread() throws Exception {
        var thread = new AtomicReference<Thread>();
        var runs = new AtomicInteger();
        var ran = new CountDownLatch(1);
        HOUSEKEEPER.schedule(() -> {
            thread.set(Thread.currentThread());
            runs.incrementAndGet();
            ran.countDown();
        }, Duration.ofMillis(5));
        assertTrue(ran.await(10, TimeUnit.SECONDS));
        assertEquals("mooring-housekeeper", thread.get().getName());
        assertTrue(thread.get().isDaemon(), "it never keeps the JVM alive");
        Thread.sleep(100);
        assertEquals(1, runs.get());
    }

    @Test
    void anEarlierDeadlineWakesTheHousekeeperWaitingForALaterOne() throws Exception {
        var late = HOUSEKEEPER.schedule(() -> {}, Duration.ofHours(1));
        Thread.sleep(200); // it now waits for the late task, parked as long as its back-off allows
        var ran = new CountDownLatch(1);
        HOUSEKEEPER.schedule(ran::countDown, Duration.ZERO);
        assertTrue(ran.await(10, TimeUnit.SECONDS), "the new task ran, long before the hour is up");
        late.cancel();
    }

    @Test
    void periodicWorkRepeatsUntilCancelledAndSurvivesItsOwnFailures() throws Exception {
        var runs = new AtomicInteger();
        var task = HOUSEKEEPER.scheduleWithFixedDelay(() -> {
            if (runs.incrementAndGet() % 2 == 0) throw new IllegalStateException("every second run fails (expected)");
        }, Duration.ofMillis(2));
        await(() -> runs.get() >= 5);
        task.cancel();
        int atCancel = runs.get();
        Thread.sleep(100);
        assertTrue(runs.get() <= atCancel + 1, "at most a run under way finished: " + atCancel + " then " + runs.get());
    }

    /**
     * A cancelled task leaves the timers at once: a lease's expiry is cancelled by every renewal, and a task left
     * queued until its deadline would keep its lease (and the queue) growing at the peer's rate.
     */
    @Test
    void aCancelledTaskLeavesAtOnceEvenWithManyDueTogether() {
        int before = HOUSEKEEPER.tasks();
        List<Housekeeper.Task> tasks = new ArrayList<>();
        for (int i = 0; i < 1000; i++) tasks.add(HOUSEKEEPER.schedule(() -> {}, Duration.ofHours(1 + i % 3)));
        assertTrue(HOUSEKEEPER.tasks() - before >= 1000, "all are waiting: " + (HOUSEKEEPER.tasks() - before));
        for (int i = 0; i < 1000; i += 2) tasks.get(i).cancel();
        assertTrue(HOUSEKEEPER.tasks() - before <= 500 + 2, "500 left (others' work aside): "
                + (HOUSEKEEPER.tasks() - before));
        tasks.forEach(Housekeeper.Task::cancel);
        assertTrue(HOUSEKEEPER.tasks() - before <= 2, "none left: " + (HOUSEKEEPER.tasks() - before));
    }

    @Test
    void workScheduledFromManyThreadsAtOnceRunsExactlyOnceEach() throws Exception {
        int threads = 8, each = 200;
        var runs = new AtomicInteger();
        var done = new CountDownLatch(threads * each);
        List<Thread> schedulers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            schedulers.add(Thread.ofVirtual().start(() -> {
                for (int i = 0; i < each; i++) {
                    HOUSEKEEPER.schedule(() -> {
                        runs.incrementAndGet();
                        done.countDown();
                    }, Duration.ofMillis(i % 7));
                }
            }));
        }
        for (Thread s : schedulers) s.join();
        assertTrue(done.await(30, TimeUnit.SECONDS), "left: " + done.getCount());
        Thread.sleep(50);
        assertEquals(threads * each, runs.get());
    }

    @Test
    void aCleanupRunsOnceItsObjectIsUnreachableOrOnceWhenCleanedExplicitly() {
        var cleaned = new AtomicInteger();
        HOUSEKEEPER.register(new Object(), cleaned::incrementAndGet);
        await(() -> {
            System.gc();
            return cleaned.get() == 1;
        });

        var explicit = new AtomicInteger();
        Object kept = new Object();
        var cleanable = HOUSEKEEPER.register(kept, explicit::incrementAndGet);
        cleanable.clean();
        cleanable.clean();
        assertEquals(1, explicit.get(), "an explicit clean runs the action once, on the caller's thread");
        java.lang.ref.Reference.reachabilityFence(kept);
    }

    @Test
    void aQueueHandedToTheHousekeeperIsDrained() {
        var queue = new ReferenceQueue<Object>();
        var drained = new AtomicInteger();
        HOUSEKEEPER.drain(queue, r -> drained.incrementAndGet());
        var ref = new WeakReference<>(new Object(), queue);
        await(() -> {
            System.gc();
            return drained.get() == 1;
        });
        assertEquals(null, ref.get());
    }

    @Test
    void badArgumentsAreRefusedNamingThem() {
        assertThrows(NullPointerException.class, () -> HOUSEKEEPER.schedule(null, Duration.ZERO));
        var e = assertThrows(IllegalArgumentException.class, () -> HOUSEKEEPER.schedule(() -> {}, Duration.ofMillis(-1)));
        assertTrue(e.getMessage().contains("negative"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> HOUSEKEEPER.scheduleWithFixedDelay(() -> {}, Duration.ZERO));
        assertThrows(IllegalArgumentException.class, () -> IdleStrategy.backoff(Duration.ZERO, Duration.ofMillis(1)));
        assertThrows(IllegalArgumentException.class,
                () -> IdleStrategy.backoff(Duration.ofMillis(2), Duration.ofMillis(1)));
    }

    private static void await(BooleanSupplier done) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("not done within 20 s");
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }
}
