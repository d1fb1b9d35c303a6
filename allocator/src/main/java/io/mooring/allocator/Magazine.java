package io.mooring.allocator;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A thread cache that the virtual threads of one shard share (Netty's adaptive allocator calls these magazines), so
 * that virtual threads get cached allocation too: a cache each would be unbounded in total, and leave state behind
 * when they end. Whoever uses it holds it with a try-lock — one CAS, and a plain store to let go — and a thread that
 * finds it held goes to the shard's bin instead of waiting: a virtual thread runs on its carrier until it blocks,
 * and nothing blocks while the magazine is held.
 */
final class Magazine {
    private static final VarHandle HELD;

    static {
        try {
            HELD = MethodHandles.lookup().findVarHandle(Magazine.class, "held", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Touched only while held (its counters are read by stats with acquire loads, as every cache's). */
    final ThreadCache cache;
    @SuppressWarnings("unused") // through HELD
    private volatile boolean held;

    Magazine(ThreadCache cache) {
        this.cache = cache;
    }

    /** Holds the magazine if nobody does. */
    boolean tryHold() {
        return !held && HELD.compareAndSet(this, false, true);
    }

    /** Holds the magazine, waiting for a holder to let go (the arena's close and flushes; holders are brief). */
    void hold() {
        while (!tryHold()) Thread.onSpinWait();
    }

    void letGo() {
        HELD.setRelease(this, false);
    }
}
