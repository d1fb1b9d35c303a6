package io.mooring.allocator;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * What an arena keeps per calling thread (found through {@link ThreadBinding}): its arena, the shard it was
 * assigned, its thread cache (a platform thread's, or a busy virtual thread's once promoted) or its shard's
 * {@link Magazine} (a virtual thread's until then; neither when caching is off), and its mt-free list.
 *
 * <p>The mt-free list holds the blocks this thread allocated that other threads closed without a hand-off (after one,
 * the closer frees them itself) — mimalloc's thread-free list. Only the owner frees a block without an atomic
 * instruction (see {@link Block#close()}), so another thread's close pushes the block here, and the owner collects it
 * at its next call into the arena; an owner that does not come back is not waited for (see {@link MtFreeCollector}). A
 * lock-free stack: many closers push, one collector takes all.
 *
 * <p>Layout (Agrona's padding by superclasses, since the JVM orders fields within a class as it likes but puts a
 * superclass's first): the fields the owner reads on every allocation ({@link CallerOwnerFields}), 64 bytes of
 * padding, the mt-free list, 64 bytes more. Every thread that frees one of the owner's blocks writes the list; the
 * padding keeps those writes from invalidating the cache line the owner's fast path reads, and the line of whatever
 * object is allocated after this one (a virtual thread reaches its Caller through a {@code WeakReference} made right
 * after it).
 */
final class Caller extends CallerMtFreeList {
    private static final VarHandle MT_FREES;
    static {
        try {
            MT_FREES = MethodHandles.lookup().findVarHandle(CallerMtFreeList.class, "mtFrees", Block.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    // 64 bytes after the mt-free list, off the next object's line (see the class comment).
    byte q00, q01, q02, q03, q04, q05, q06, q07, q08, q09, q10, q11, q12, q13, q14, q15,
            q16, q17, q18, q19, q20, q21, q22, q23, q24, q25, q26, q27, q28, q29, q30, q31,
            q32, q33, q34, q35, q36, q37, q38, q39, q40, q41, q42, q43, q44, q45, q46, q47,
            q48, q49, q50, q51, q52, q53, q54, q55, q56, q57, q58, q59, q60, q61, q62, q63;

    Caller(RdmaArena arena, Thread thread, Shard shard, ThreadCache cache, Magazine magazine) {
        super(arena, thread, shard, cache, magazine);
    }

    /** Pushes an mt-freed block; true if the list was empty (the pusher must make the owner known). */
    boolean pushMtFree(Block b) {
        Block h;
        do {
            h = mtFrees;
            b.setNextMtFree(h);
        } while (!MT_FREES.compareAndSet(this, h, b));
        return h == null;
    }

    /** Whether blocks wait on the mt-free list. On the fast path. */
    boolean hasMtFrees() {
        return mtFrees != null;
    }

    /** The newest block waiting (follow {@code nextMtFree()}), for counting. */
    Block peekMtFrees() {
        return mtFrees;
    }

    /** Takes every waiting block (newest first). */
    Block takeMtFrees() {
        return (Block) MT_FREES.getAndSet(this, (Block) null);
    }
}

/** A Caller's fields that its owner reads on every allocation: first in its layout (see {@link Caller}). */
abstract class CallerOwnerFields {
    final RdmaArena arena;
    final Thread thread;
    final Shard shard;
    // Written by the owner alone, and by it only once for a virtual thread (its promotion, see ThreadBinding); other
    // threads reach the cache only through ThreadBinding.ownersWithCache, which the promotion adds it to after.
    ThreadCache cache;
    Magazine magazine; // a virtual thread's shared cache until it is promoted (then cache is null)
    int magazineAllocations; // the owner's allocations while it has a magazine, counted towards its promotion

    CallerOwnerFields(RdmaArena arena, Thread thread, Shard shard, ThreadCache cache, Magazine magazine) {
        this.arena = arena;
        this.thread = thread;
        this.shard = shard;
        this.cache = cache;
        this.magazine = magazine;
    }
}

/** 64 bytes between the owner's fields and the mt-free list (see {@link Caller}). */
abstract class CallerPadding extends CallerOwnerFields {
    byte p00, p01, p02, p03, p04, p05, p06, p07, p08, p09, p10, p11, p12, p13, p14, p15,
            p16, p17, p18, p19, p20, p21, p22, p23, p24, p25, p26, p27, p28, p29, p30, p31,
            p32, p33, p34, p35, p36, p37, p38, p39, p40, p41, p42, p43, p44, p45, p46, p47,
            p48, p49, p50, p51, p52, p53, p54, p55, p56, p57, p58, p59, p60, p61, p62, p63;

    CallerPadding(RdmaArena arena, Thread thread, Shard shard, ThreadCache cache, Magazine magazine) {
        super(arena, thread, shard, cache, magazine);
    }
}

/** The mt-free list, written by every thread that frees one of the owner's blocks (see {@link Caller}). */
abstract class CallerMtFreeList extends CallerPadding {
    volatile Block mtFrees; // through Caller.MT_FREES, and read as a volatile

    CallerMtFreeList(RdmaArena arena, Thread thread, Shard shard, ThreadCache cache, Magazine magazine) {
        super(arena, thread, shard, cache, magazine);
    }
}
