package io.mooring.verbs.soft;

import java.util.function.Supplier;

/**
 * A queue of work requests as a NIC keeps one: a ring of preallocated entries, filled in place at post time and
 * copied out by whoever executes them, so neither posting nor executing allocates. Not thread-safe: its owner
 * guards it. Full never happens in practice — the public layer posts at most the queue's depth, and an entry leaves
 * the ring when it is taken, before its completion can free a slot there.
 */
final class WorkRing<W extends WorkRing.Entry<W>> {
    /** A work request that can take another's contents. */
    interface Entry<W> {
        void copyFrom(W other);
    }

    private final Object[] entries;
    private int head;
    private int count;

    WorkRing(int capacity, Supplier<W> make) {
        entries = new Object[capacity];
        for (int i = 0; i < capacity; i++) entries[i] = make.get();
    }

    /** The entry after the newest, to fill in place: it is queued from now on. */
    W add() {
        if (count == entries.length) {
            throw new IllegalStateException("a soft work queue of " + entries.length + " entries overflowed");
        }
        return at(head + count++);
    }

    /** Copies the oldest entry into {@code into} and removes it; false if there is none. */
    boolean take(W into) {
        if (count == 0) return false;
        into.copyFrom(at(head));
        head = (head + 1) % entries.length;
        count--;
        return true;
    }

    /** Queues {@code from} as the oldest entry again (one just taken, whose request failed before using it). */
    void putBack(W from) {
        head = (head - 1 + entries.length) % entries.length;
        count++;
        at(head).copyFrom(from);
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
}
