package io.mooring.verbs;

import java.util.Arrays;
import java.util.function.Consumer;

/**
 * The queue pairs of one device context by QP number, as the completion routers of all its CQs find them: one table
 * per context, read on every completion without a lock and without boxing the number (an open-addressed array,
 * copied on write — QPs come and go rarely, completions arrive all the time).
 */
final class QpTable {
    private static final int EMPTY = -1; // QP numbers are 24 bits: never -1

    /** One published state: the keys and values arrays, probed linearly from the number's hash. */
    private record Entries(int[] numbers, QpQueues[] queues, int size) {
        static Entries empty(int capacity) {
            int[] numbers = new int[capacity];
            Arrays.fill(numbers, EMPTY);
            return new Entries(numbers, new QpQueues[capacity], 0);
        }

        int indexOf(int qpn) {
            int mask = numbers.length - 1;
            for (int i = mix(qpn) & mask; ; i = (i + 1) & mask) {
                if (numbers[i] == qpn || numbers[i] == EMPTY) return i;
            }
        }
    }

    private volatile Entries entries = Entries.empty(16);

    /** The queues of QP {@code qpn}, or null if it is not (or no longer) on this context. */
    QpQueues get(int qpn) {
        Entries e = entries;
        int i = e.indexOf(qpn);
        return e.numbers[i] == qpn ? e.queues[i] : null;
    }

    /** Runs {@code action} on the queues of every QP in the table as it is now. */
    void forEach(Consumer<QpQueues> action) {
        for (QpQueues q : entries.queues) {
            if (q != null) action.accept(q);
        }
    }

    synchronized void put(int qpn, QpQueues queues) {
        Entries e = entries;
        int capacity = (e.size + 1) * 2 > e.numbers.length ? e.numbers.length * 2 : e.numbers.length;
        entries = copy(e, capacity, qpn, queues);
    }

    /** Removes QP {@code qpn} if {@code queues} are still its queues (a reused number may belong to a newer QP). */
    synchronized void remove(int qpn, QpQueues queues) {
        if (get(qpn) == queues) entries = copy(entries, entries.numbers.length, qpn, null);
    }

    /** A fresh table of {@code capacity} with every entry of {@code e} but {@code qpn}, then {@code qpn} if mapped. */
    private static Entries copy(Entries e, int capacity, int qpn, QpQueues queues) {
        Entries next = Entries.empty(capacity);
        int size = 0;
        for (int i = 0; i < e.numbers.length; i++) {
            if (e.numbers[i] == EMPTY || e.numbers[i] == qpn) continue;
            int at = next.indexOf(e.numbers[i]);
            next.numbers[at] = e.numbers[i];
            next.queues[at] = e.queues[i];
            size++;
        }
        if (queues != null) {
            int at = next.indexOf(qpn);
            next.numbers[at] = qpn;
            next.queues[at] = queues;
            size++;
        }
        return new Entries(next.numbers, next.queues, size);
    }

    /** Spreads sequential QP numbers (as soft hands them out) and the driver's over the table. */
    private static int mix(int qpn) {
        return qpn * 0x9E3779B9 >>> 16 ^ qpn;
    }
}
