package io.mooring.lifecycle;

import java.lang.ref.Cleaner;
import java.lang.ref.PhantomReference;
import java.lang.ref.Reference;
import java.lang.ref.ReferenceQueue;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.NavigableSet;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.IntSupplier;

/**
 * Mooring's one background thread per JVM ({@code mooring-housekeeper}, a daemon): it runs the delayed and periodic
 * work of every module (the arenas' decay purges and collector passes, the leases' expiries, the handshakes'
 * deadlines, the sessions' health checks) and the cleanups of objects that became unreachable unclosed (the resource
 * graph's leaked handles, the registration cache's forgotten holds). Between passes it waits by an {@link IdleStrategy}
 * — parking with back-off, never longer than the next task's deadline — so an unreachable object is cleaned up within
 * {@value #MAX_PARK_MILLIS} ms of the garbage collector finding it.
 *
 * <p>Work runs one piece at a time on this thread: it must be short and must not wait for other work here. A piece
 * that throws is logged and the rest goes on (a periodic task keeps its schedule). Applications need not use it.
 */
public final class Housekeeper {
    static final long MAX_PARK_MILLIS = 50;
    private static final System.Logger LOG = System.getLogger(Housekeeper.class.getName());
    private static final Housekeeper SHARED = new Housekeeper("mooring-housekeeper",
            IdleStrategy.backoff(Duration.ofMillis(1), Duration.ofMillis(MAX_PARK_MILLIS)));

    private final ReentrantLock lock = new ReentrantLock();
    /**
     * Guarded by {@link #lock}; ordered by deadline, then by age. A sorted set, not a heap: a cancelled task leaves it
     * at once in O(log n) — a lease's expiry is cancelled by every renewal and every early end.
     */
    private final NavigableSet<Task> timers =
            new TreeSet<>(Comparator.<Task>comparingLong(t -> t.due).thenComparingLong(t -> t.seq));
    private long scheduled; // guarded by lock: the tasks made, each one's seq
    private final ReferenceQueue<Object> unreachable = new ReferenceQueue<>();
    /** Keeps each registered cleanup reachable until it runs or is cleaned explicitly. */
    private final Set<Cleanup> cleanups = ConcurrentHashMap.newKeySet();
    private final List<IntSupplier> drains = new CopyOnWriteArrayList<>();
    private final IdleStrategy idle;
    private final Thread thread;

    private Housekeeper(String name, IdleStrategy idle) {
        this.idle = idle;
        this.thread = Thread.ofPlatform().daemon().name(name).start(this::run);
    }

    /** The JVM's housekeeper, started with the first use. */
    public static Housekeeper shared() {
        return SHARED;
    }

    /** Delayed or periodic work; {@link #cancel()} keeps it from running again (a run under way finishes). */
    public static final class Task {
        private final Runnable work;
        private final long periodNanos;
        private final long seq;
        private long due; // guarded by the housekeeper's lock; changed only while out of its timers
        private boolean cancelled; // guarded by the housekeeper's lock
        private final Housekeeper owner;

        private Task(Housekeeper owner, Runnable work, long due, long periodNanos, long seq) {
            this.owner = owner;
            this.work = work;
            this.due = due;
            this.periodNanos = periodNanos;
            this.seq = seq;
        }

        public void cancel() {
            owner.lock.lock();
            try {
                cancelled = true;
                owner.timers.remove(this);
            } finally {
                owner.lock.unlock();
            }
        }
    }

    /** Runs {@code work} once, {@code delay} from now. */
    public Task schedule(Runnable work, Duration delay) {
        return add(work, delay, 0);
    }

    /** Runs {@code work} {@code delay} from now and again {@code delay} after each run ends, until cancelled. */
    public Task scheduleWithFixedDelay(Runnable work, Duration delay) {
        if (!delay.isPositive()) throw new IllegalArgumentException("a periodic task needs a positive delay: " + delay);
        return add(work, delay, delay.toNanos());
    }

    private Task add(Runnable work, Duration delay, long periodNanos) {
        Objects.requireNonNull(work, "work");
        if (delay.isNegative()) throw new IllegalArgumentException("a negative delay: " + delay);
        long due = System.nanoTime() + delay.toNanos();
        Task task;
        boolean first;
        lock.lock();
        try {
            task = new Task(this, work, due, periodNanos, scheduled++);
            timers.add(task);
            first = timers.first() == task;
        } finally {
            lock.unlock();
        }
        if (first) LockSupport.unpark(thread); // a deadline earlier than the one it waits for
        return task;
    }

    /**
     * Tasks waiting for their time: delayed and periodic ones, not cancelled (a periodic one not while it runs). A
     * cancelled task is not among them: it leaves at once, holding nothing until its deadline (tests, diagnostics).
     */
    public int tasks() {
        lock.lock();
        try {
            return timers.size();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Runs {@code action} here once {@code referent} is unreachable — a {@link Cleaner}'s contract, without a thread of
     * its own. The action must not refer to {@code referent}, or it never becomes unreachable.
     */
    public Cleaner.Cleanable register(Object referent, Runnable action) {
        return new Cleanup(Objects.requireNonNull(referent, "referent"), Objects.requireNonNull(action, "action"));
    }

    /**
     * Drains {@code queue} at every pass, handing each reference to {@code handler}: for a class that keeps its own
     * references (and its own bookkeeping of them) rather than {@link #register}'s.
     */
    public void drain(ReferenceQueue<?> queue, Consumer<Reference<?>> handler) {
        Objects.requireNonNull(handler, "handler");
        drains.add(() -> {
            int drained = 0;
            for (Reference<?> r; (r = queue.poll()) != null; drained++) {
                Reference<?> found = r;
                runSafely(() -> handler.accept(found));
            }
            return drained;
        });
    }

    private final class Cleanup extends PhantomReference<Object> implements Cleaner.Cleanable {
        private final Runnable action;

        Cleanup(Object referent, Runnable action) {
            super(referent, unreachable);
            this.action = action;
            cleanups.add(this);
        }

        @Override
        public void clean() {
            if (cleanups.remove(this)) {
                clear();
                action.run();
            }
        }
    }

    private void run() {
        for (;;) {
            int work = runDue() + cleanUp();
            idle.idle(work, nanosToNextDue());
        }
    }

    private int runDue() {
        int ran = 0;
        for (Task t; (t = nextDue()) != null; ran++) {
            runSafely(t.work);
            if (t.periodNanos > 0) reschedule(t);
        }
        return ran;
    }

    private void reschedule(Task t) {
        lock.lock();
        try {
            if (t.cancelled) return;
            t.due = System.nanoTime() + t.periodNanos;
            timers.add(t);
        } finally {
            lock.unlock();
        }
    }

    private Task nextDue() {
        lock.lock();
        try {
            return !timers.isEmpty() && timers.first().due - System.nanoTime() <= 0 ? timers.pollFirst() : null;
        } finally {
            lock.unlock();
        }
    }

    private long nanosToNextDue() {
        lock.lock();
        try {
            return timers.isEmpty() ? Long.MAX_VALUE : Math.max(0, timers.first().due - System.nanoTime());
        } finally {
            lock.unlock();
        }
    }

    private int cleanUp() {
        int done = 0;
        for (Reference<?> r; (r = unreachable.poll()) != null; done++) runSafely(((Cleanup) r)::clean);
        for (IntSupplier d : drains) done += d.getAsInt();
        return done;
    }

    private static void runSafely(Runnable work) {
        try {
            work.run();
        } catch (RuntimeException | Error e) {
            LOG.log(System.Logger.Level.ERROR, "housekeeping work failed; the rest goes on", e);
        }
    }
}
