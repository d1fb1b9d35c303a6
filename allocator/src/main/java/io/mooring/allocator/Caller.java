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
 * Until then the memory is quarantined, never reused; once the owner has died, anyone may drain it. A lock-free
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

    final Thread thread;
    final Shard shard;
    final ThreadCache cache;
    @SuppressWarnings("unused") // through INBOX
    private volatile Block inbox;

    Caller(Thread thread, Shard shard, ThreadCache cache) {
        this.thread = thread;
        this.shard = shard;
        this.cache = cache;
    }

    void handOver(Block b) {
        Block h;
        do {
            h = inbox;
            b.nextInInbox = h;
        } while (!INBOX.compareAndSet(this, h, b));
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
