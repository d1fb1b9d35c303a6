package io.mooring.allocator;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Set;

/**
 * What an arena keeps per calling thread: the shard it was assigned, its thread cache (null for virtual threads
 * or when caching is off), and its inbox.
 *
 * <p>The inbox holds the blocks this thread allocated that other threads closed. Only the allocating thread
 * closes a block without an atomic instruction (see {@link Block#close()}), so a close from elsewhere hands the
 * block over here, and the owner frees it on its next call into the arena — as mimalloc collects remote frees.
 * An owner that does not come back is not waited for: once it has ended, or while it is
 * {@linkplain #isBetweenCalls() between calls}, a collector frees what it can (see {@code RdmaArena}). A lock-free
 * stack: many closers push, one drainer takes all.
 */
final class Caller {
    private static final VarHandle INBOX;
    /** The classes whose frames mean a thread may be half way through a cache operation or a block's close. */
    private static final Set<String> ALLOCATOR_CLASSES = Set.of(RdmaArena.class.getName(), Block.class.getName(),
            ThreadBinding.class.getName(), ThreadCache.class.getName());

    static {
        try {
            INBOX = MethodHandles.lookup().findVarHandle(Caller.class, "inbox", Block.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final RdmaArena arena;
    final Thread thread;
    final Shard shard;
    final ThreadCache cache;
    @SuppressWarnings("unused") // through INBOX
    private volatile Block inbox;

    Caller(RdmaArena arena, Thread thread, Shard shard, ThreadCache cache) {
        this.arena = arena;
        this.thread = thread;
        this.shard = shard;
        this.cache = cache;
    }

    /** Pushes a block closed elsewhere; true if the inbox was empty (the pusher must make the owner known). */
    boolean handOver(Block b) {
        Block h;
        do {
            h = inbox;
            b.nextInInbox = h;
        } while (!INBOX.compareAndSet(this, h, b));
        return h == null;
    }

    boolean inboxIsEmpty() {
        return inbox == null;
    }

    /** The newest block waiting (follow {@code nextInInbox}), for counting. */
    Block peekInbox() {
        return inbox;
    }

    /** Takes every waiting block (newest first). */
    Block takeInbox() {
        return (Block) INBOX.getAndSet(this, (Block) null);
    }

    /**
     * Whether the thread is between calls into the allocator, so that another thread may do what otherwise only
     * the owner does: take back its cache, free blocks handed over to it.
     *
     * <p>Found by walking its stack, which the JVM does in a handshake with the thread (stopped at a safepoint
     * poll, or blocked, or in native code — a thread waiting in {@code accept()}); the handshake orders the
     * thread's memory accesses before it with the walker's after it. If no frame is the allocator's, no cache
     * operation and no {@code close()} or {@code segment()} of a block is half done, and whatever the thread does
     * next starts after the walk, seeing what the walker published before it. The fast paths stay free of any
     * fence for it; the price, tens of microseconds a walk, is paid by collectors only. (The Java memory model
     * does not speak of handshakes; HotSpot's stack walk is one.) A thread found inside the allocator, for any
     * arena, is simply tried again later.
     */
    boolean isBetweenCalls() {
        for (StackTraceElement frame : thread.getStackTrace()) {
            if (ALLOCATOR_CLASSES.contains(frame.getClassName())) return false;
        }
        return true;
    }
}
