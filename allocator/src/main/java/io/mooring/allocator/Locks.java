package io.mooring.allocator;

import java.util.concurrent.locks.Lock;
import java.util.function.LongSupplier;

/** The stats' one way to read a counter that only the holders of a lock write: under that lock, so it is current. */
final class Locks {
    private Locks() {}

    static long read(Lock lock, LongSupplier counter) {
        lock.lock();
        try {
            return counter.getAsLong();
        } finally {
            lock.unlock();
        }
    }
}
