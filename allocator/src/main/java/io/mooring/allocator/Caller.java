package io.mooring.allocator;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * What an arena keeps per calling thread: the shard it was assigned, its thread cache (null for virtual threads
 * or when caching is off), and its inbox.
 *
 * <p>The inbox holds the blocks this thread allocated that other threads closed. Only the allocating thread
 * closes a block without an atomic instruction (see {@link Block#close()}), so a close from elsewhere hands the
 * block over here, and the owner frees it on its next call into the arena — as mimalloc collects remote frees.
 * An owner that does not come back is not waited for: once it has ended, or while it is
 * between calls, the collector frees what it can (see {@link MtFreeCollector}). A lock-free
 * stack: many closers push, one drainer takes all.
 */
final class Caller {
    private static final VarHandle INBOX;
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
}
