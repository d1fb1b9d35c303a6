package io.mooring.properties;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;

/** Runs one body on several threads released together, so their steps really interleave. */
final class Workers {
    private Workers() {}

    /** What one thread does; {@code thread} is its index from 0. */
    @FunctionalInterface
    interface Body {
        void run(int thread) throws Exception;
    }

    /** Runs {@code body} on {@code threads} platform threads at once, waits for all, and rethrows the first failure. */
    static void runTogether(int threads, Body body) {
        runTogether(threads, false, body);
    }

    /** The same on virtual threads if {@code virtual}. */
    static void runTogether(int threads, boolean virtual, Body body) {
        var barrier = new CyclicBarrier(threads);
        var errors = new ConcurrentLinkedQueue<Throwable>();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int me = t;
            Thread.Builder builder = virtual ? Thread.ofVirtual() : Thread.ofPlatform();
            workers.add(builder.start(() -> {
                try {
                    barrier.await();
                    body.run(me);
                } catch (Throwable e) {
                    errors.add(e);
                }
            }));
        }
        for (Thread w : workers) {
            try {
                w.join();
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
        if (!errors.isEmpty()) throw new AssertionError("a worker failed", errors.peek());
    }
}
