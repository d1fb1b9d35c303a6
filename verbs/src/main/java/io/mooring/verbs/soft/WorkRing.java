package io.mooring.verbs.soft;

import java.util.function.Supplier;

/**
 * A queue of work requests as a NIC keeps one: a ring of entries, filled in place at post time and copied out by
 * whoever executes them. The ring grows, up to the queue's depth, to the most requests that were queued at once — a
 * QP made with a deep queue that keeps a few requests in it holds a few entries (an endpoint's sessions are many),
 * each made when first used — and then neither posting nor executing allocates. Not thread-safe: its owner guards
 * it. Full never happens in practice — the public layer posts at most the queue's depth, and an entry leaves the ring
 * when it is taken, before its completion can free a slot there.
 */
final class WorkRing<W extends WorkRing.Entry<W>> {
    /** A work request that can take another's contents. */
    interface Entry<W> {
        void copyFrom(W other);
    }

    /** The entries a ring starts with. */
    private static final int FIRST = 2;

    private final int depth;
    private final Supplier<W> make;
    private Object[] entries;
    private int head;
    private int count;

    WorkRing(int depth, Supplier<W> make) {
        this.depth = depth;
        this.make = make;
        entries = new Object[Math.min(depth, FIRST)];
    }

    /** The entry after the newest, to fill in place: it is queued from now on. */
    W add() {
        if (count == entries.length) {
            if (count == depth) {
                throw new IllegalStateException("a soft work queue of " + depth + " entries overflowed");
            }
            grow();
        }
        return filled(head + count++);
    }

    /** Doubles the ring (at most to the depth), the queued entries first, in order. */
    private void grow() {
        Object[] bigger = new Object[Math.min(depth, 2 * entries.length)];
        for (int i = 0; i < count; i++) bigger[i] = entries[(head + i) % entries.length];
        entries = bigger;
        head = 0;
    }

    /** Copies the oldest entry into {@code into} and removes it; false if there is none. */
    boolean take(W into) {
        if (count == 0) return false;
        into.copyFrom(at(head));
        head = (head + 1) % entries.length;
        count--;
        return true;
    }

    /** The oldest entry, left in place; null if there is none. */
    W peek() {
        return count == 0 ? null : at(head);
    }

    /** Queues {@code from} as the oldest entry again (one just taken, whose request failed before using it). */
    void putBack(W from) {
        head = (head - 1 + entries.length) % entries.length;
        count++;
        filled(head).copyFrom(from);
    }

    boolean isEmpty() {
        return count == 0;
    }

    int size() {
        return count;
    }

    void clear() {
        head = 0;
        count = 0;
    }

    @SuppressWarnings("unchecked")
    private W at(int index) {
        return (W) entries[index % entries.length];
    }

    /** The entry at {@code index}, made the first time it is used: a QP that never sends holds none. */
    private W filled(int index) {
        int i = index % entries.length;
        if (entries[i] == null) entries[i] = make.get();
        return at(i);
    }
}
