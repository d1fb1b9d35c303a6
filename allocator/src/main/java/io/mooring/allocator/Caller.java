package io.mooring.allocator;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * What an arena keeps per calling thread (found through {@link ThreadBinding}): its arena, the shard it was
 * assigned, its thread cache (null for virtual threads or when caching is off), and its mt-free list.
 *
 * <p>The mt-free list holds the blocks this thread allocated that other threads closed — mimalloc's thread-free
 * list. Only the owner frees a block without an atomic instruction (see {@link Block#close()}), so another thread's
 * close pushes the block here, and the owner collects it at its next call into the arena; an owner that does not
 * come back is not waited for (see {@link MtFreeCollector}). A lock-free stack: many closers push, one collector
 * takes all.
 */
final class Caller {
    private static final VarHandle MT_FREES;
    static {
        try {
            MT_FREES = MethodHandles.lookup().findVarHandle(Caller.class, "mtFrees", Block.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final RdmaArena arena;
    final Thread thread;
    final Shard shard;
    final ThreadCache cache;
    @SuppressWarnings("unused") // through MT_FREES
    private volatile Block mtFrees;

    Caller(RdmaArena arena, Thread thread, Shard shard, ThreadCache cache) {
        this.arena = arena;
        this.thread = thread;
        this.shard = shard;
        this.cache = cache;
    }

    /** Pushes an mt-freed block; true if the list was empty (the pusher must make the owner known). */
    boolean pushMtFree(Block b) {
        Block h;
        do {
            h = mtFrees;
            b.nextMtFree = h;
        } while (!MT_FREES.compareAndSet(this, h, b));
        return h == null;
    }

    /** Whether blocks wait on the mt-free list. On the fast path. */
    boolean hasMtFrees() {
        return mtFrees != null;
    }

    /** The newest block waiting (follow {@code nextMtFree}), for counting. */
    Block peekMtFrees() {
        return mtFrees;
    }

    /** Takes every waiting block (newest first). */
    Block takeMtFrees() {
        return (Block) MT_FREES.getAndSet(this, (Block) null);
    }
}
