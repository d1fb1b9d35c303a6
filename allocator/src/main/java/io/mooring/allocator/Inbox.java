package io.mooring.allocator;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Blocks closed by a thread other than the one they are confined to. Only the owner can close a confined
 * scope, so such a block waits here (its memory quarantined, never reused) until the owner drains the inbox
 * on its next arena call — or, once the owner has died and nobody can reach the segment any more, until
 * anyone drains it. One per {@link Caller}. A lock-free stack: many closers push, one drainer takes all.
 */
final class Inbox {
    private static final VarHandle HEAD;

    static {
        try {
            HEAD = MethodHandles.lookup().findVarHandle(Inbox.class, "head", Block.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // through HEAD
    private volatile Block head;

    void push(Block b) {
        Block h;
        do {
            h = head;
            b.nextInInbox = h;
        } while (!HEAD.compareAndSet(this, h, b));
    }

    boolean isEmpty() {
        return head == null;
    }

    /** The newest waiting block (follow {@code nextInInbox}), for counting. */
    Block peek() {
        return head;
    }

    /** Takes every waiting block (newest first). */
    Block takeAll() {
        return (Block) HEAD.getAndSet(this, (Block) null);
    }
}
