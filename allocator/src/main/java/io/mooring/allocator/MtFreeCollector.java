package io.mooring.allocator;

import io.mooring.lifecycle.Housekeeper;
import java.lang.ref.WeakReference;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * Collects mt frees — mimalloc's word for frees made by another thread than the owner.
 *
 * <p>The vocabulary, used throughout the allocator: a block is <em>freed locally</em> ({@code freeLocal}) when its
 * owner — the thread that allocated it — closes it: no atomic instruction, into the owner's cache. Any other thread's
 * close of a block never handed off makes an <em>mt free</em> ({@link #freeMt}): a CAS on the block's state and a push
 * onto the owner's <em>mt-free list</em> ({@link Caller}); the memory is not reused until the block is
 * <em>collected</em> — freed for real, by the owner at its next call into the arena ({@link #collectOwn}), or by a
 * collector pass ({@link #collect}) when the owner is not there to do it. Chunks are <em>released</em> (deregistered
 * and unmapped), caches <em>flushed</em> (their regions go back to the shard) or, when the arena closes,
 * <em>retired</em>. (A close after a hand-off needs no owner, so it is no mt free: the closer frees into its own cache,
 * see {@code ThreadBinding.free}.)
 *
 * <p>A pass runs {@value #DELAY_MILLIS} ms after an mt free (and at every purge and close), and acts for owners that
 * are not there: it collects the mt frees of owners that ended, or that are {@linkplain #isBetweenCalls between
 * calls} and never made the block's segment (a confined scope only its owner can close: the owner could still write
 * through it); it flushes the caches of owners that ended, and once the arena closes retires the caches of owners
 * between calls. A pass that found an owner inside the allocator runs again {@value #DELAY_MILLIS} ms later.
 */
final class MtFreeCollector {
    /** How long after an mt free a collector pass runs (Block's comment states it too). */
    static final long DELAY_MILLIS = 20;
    private static final System.Logger LOG = System.getLogger(MtFreeCollector.class.getName());
    /** The classes whose frames mean a thread may be half way through a cache operation or a block's close. */
    private static final Set<String> ALLOCATOR_CLASSES = Set.of(RdmaArena.class.getName(), Block.class.getName(),
            BlockPin.class.getName(), ThreadBinding.class.getName(), ThreadCache.class.getName(),
            Shard.class.getName(), MtFreeCollector.class.getName());

    private final ThreadBinding threads;
    /** Owners whose mt-free list may hold blocks: added by whoever pushes onto an empty list, removed by passes. */
    private final Set<Caller> ownersWithMtFrees = ConcurrentHashMap.newKeySet();
    /**
     * Held by a pass and by a stats snapshot: a snapshot sees no ended owner's cache counts move (it counts every
     * cache exactly once) and no block between an mt-free list and its free.
     */
    private final Object lock = new Object();
    private final AtomicBoolean scheduled = new AtomicBoolean();
    private final Runnable scheduledPass;

    MtFreeCollector(ThreadBinding threads) {
        this.threads = threads;
        var self = new WeakReference<>(this); // the housekeeper must not keep a dropped arena's collector alive
        this.scheduledPass = () -> {
            MtFreeCollector collector = self.get();
            if (collector != null) collector.runScheduled();
        };
    }

    /**
     * An mt free: {@code b} was closed by another thread than its owner. It waits on the owner's mt-free list for the
     * owner's next call or a pass scheduled here; it is collected at once if the owner has ended.
     */
    void freeMt(Block b) {
        Caller owner = b.owner;
        if (owner.thread.isAlive()) {
            push(b);
            schedule();
        } else {
            owner.pushMtFree(b);
            collectAll(owner.takeMtFrees(), false);
        }
    }

    private void push(Block b) {
        if (b.owner.pushMtFree(b)) ownersWithMtFrees.add(b.owner);
    }

    /** The owner collects its own mt frees (at its next call into the arena). */
    void collectOwn(Caller me) {
        collectAll(me.takeMtFrees(), true);
    }

    /** Collects the blocks taken from an mt-free list (follow {@code nextMtFree()}). */
    private void collectAll(Block first, boolean byOwner) {
        for (Block b = first; b != null; b = b.nextMtFree()) collectOne(b, byOwner);
    }

    /** Frees an mt-freed block for real, unless its owner freed it locally too (a racing double close). */
    private void collectOne(Block b, boolean byOwner) {
        if (b.finishMtFree(byOwner)) {
            if (byOwner) threads.free(b);
            else threads.freeToShard(b);
        } else {
            LOG.log(System.Logger.Level.WARNING, "{0} was closed twice at once, by its owner {1} and by another "
                    + "thread; freed once", b, b.owner.thread);
        }
    }

    // ---- passes ----------------------------------------------------------------------------------------------

    /** Runs a pass {@value #DELAY_MILLIS} ms from now, unless one is already due. */
    void schedule() {
        if (!scheduled.get() && scheduled.compareAndSet(false, true)) {
            Housekeeper.shared().schedule(scheduledPass, Duration.ofMillis(DELAY_MILLIS));
        }
    }

    private void runScheduled() {
        scheduled.set(false);
        collectAndRetry();
    }

    /** A pass now, and another later if an owner was inside the allocator. */
    void collectAndRetry() {
        if (collect()) schedule();
    }

    /**
     * A pass: does what owners are not there to do (see the class comment). Any thread may run it; one at a time.
     *
     * @return whether an owner was inside the allocator, so something is left to try again
     */
    boolean collect() {
        synchronized (lock) {
            boolean retry = false;
            for (Caller owner : ownersWithMtFrees) {
                if (ownersWithMtFrees.remove(owner)) retry |= collectFor(owner);
            }
            for (Caller c : threads.ownersWithCache()) {
                if (!c.thread.isAlive()) {
                    threads.flushEndedOwnersCache(c);
                } else if (threads.cachesRetired() && !c.cache.isRetired()) {
                    if (c.thread == Thread.currentThread() || isBetweenCalls(c)) {
                        c.cache.retire();
                    } else {
                        retry = true;
                    }
                }
            }
            threads.unbindEndedThreads();
            return retry;
        }
    }

    /**
     * Collects the blocks on an owner's mt-free list that may be collected without it. They are taken before the
     * owner's stack is walked, so each was pushed before the walk: an owner found between calls is not half way
     * through closing one of them, and any close it tries later sees it closed.
     *
     * @return whether some were left because the owner was inside the allocator
     */
    private boolean collectFor(Caller owner) {
        Block taken = owner.takeMtFrees();
        if (taken == null) return false;
        if (owner.thread == Thread.currentThread()) {
            collectAll(taken, true);
            return false;
        }
        boolean ended = !owner.thread.isAlive();
        boolean betweenCalls = ended || isBetweenCalls(owner);
        for (Block b = taken, next; b != null; b = next) {
            next = b.nextMtFree(); // before a push back rewrites it
            if (ended || (betweenCalls && !b.hasScope())) {
                collectOne(b, false);
            } else {
                push(b); // for the owner's next call: its scope (or the owner, busy now) is needed
            }
        }
        return !betweenCalls;
    }

    /**
     * Whether the owner is between calls into the allocator, so that another thread may do what otherwise only the
     * owner does: retire its cache, collect its mt frees.
     *
     * <p>Found by walking its stack, which the JVM does in a handshake with the thread (stopped at a safepoint
     * poll, or blocked, or in native code — a thread waiting in {@code accept()}); the handshake orders the
     * thread's memory accesses before it with the walker's after it. If no frame is the allocator's, no cache
     * operation and no {@code close()} or {@code segment()} of a block is half done, and whatever the thread does
     * next starts after the walk, seeing what the walker published before it. The fast paths stay free of any
     * fence for it; the price, tens of microseconds a walk, is paid by passes only. (The Java memory model does not
     * speak of handshakes; HotSpot's stack walk is one.) A thread found inside the allocator, for any arena, is
     * simply tried again later.
     */
    static boolean isBetweenCalls(Caller owner) {
        StackTraceElement[] frames = owner.thread.getStackTrace(); // innermost first
        for (int i = 0; i < frames.length; i++) {
            if (!ALLOCATOR_CLASSES.contains(frames[i].getClassName())) continue;
            if (isRunningPinsOnClose(frames[i])) return true;
            int pin = pinAwaitingAnOwner(frames, i);
            if (pin < 0) return false;
            i = pin; // and what called that pin: user code, an onClose, or the allocator
        }
        return true;
    }

    /**
     * If the allocator frames from {@code i} on are a pin waiting for another block's owner ({@code Block.pin}, then
     * {@code BlockPin.pin} in {@link #awaitBetweenCalls}, maybe walking that owner's stack), the index of the {@code
     * Block.pin} frame, else -1. Such a thread does nothing to its own blocks or cache until the wait ends, so it counts as between calls if what
     * called the pin does: otherwise two threads pinning each other's blocks at once would each wait for the other for
     * ever.
     */
    private static int pinAwaitingAnOwner(StackTraceElement[] frames, int i) {
        String self = MtFreeCollector.class.getName();
        while (i < frames.length && frames[i].getClassName().equals(self)
                && !frames[i].getMethodName().equals("awaitBetweenCalls")) {
            i++; // the walk itself: isBetweenCalls and the helpers it calls
        }
        boolean awaiting = i + 2 < frames.length && frames[i].getClassName().equals(self)
                && isFrame(frames[i + 1], BlockPin.class, "pin") && isFrame(frames[i + 2], Block.class, "pin");
        return awaiting ? i + 2 : -1;
    }

    private static boolean isFrame(StackTraceElement frame, Class<?> type, String method) {
        return frame.getClassName().equals(type.getName()) && frame.getMethodName().equals(method);
    }

    /**
     * Whether the innermost allocator frame is a close running its pins' {@code onClose}: that close has done all it
     * does to the block and the cache, so the owner counts as between calls — which keeps a pinner on another thread
     * from waiting for an {@code onClose} that waits for it.
     */
    private static boolean isRunningPinsOnClose(StackTraceElement frame) {
        return isFrame(frame, BlockPin.class, "runOnClose");
    }

    /**
     * Waits until the owner is {@linkplain #isBetweenCalls between calls} or has ended: what a pin by another thread
     * waits for (see {@link Block#pin}). Yields, then sleeps a little, between stack walks.
     */
    static void awaitBetweenCalls(Caller owner) {
        for (int tries = 0; owner.thread.isAlive() && !isBetweenCalls(owner); tries++) {
            if (tries < 16) Thread.yield();
            else LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(100));
        }
    }

    // ---- stats -----------------------------------------------------------------------------------------------

    /** The lock a stats snapshot holds (see {@link #lock}). */
    Object lock() {
        return lock;
    }

    /** Blocks on mt-free lists now, not yet collected. Under {@link #lock()}. */
    long uncollected() {
        long n = 0;
        for (Caller owner : ownersWithMtFrees) {
            for (Block b = owner.peekMtFrees(); b != null; b = b.nextMtFree()) n++;
        }
        return n;
    }

    /** Owners with blocks waiting on their mt-free list. */
    int ownersWaiting() {
        return ownersWithMtFrees.size();
    }
}
