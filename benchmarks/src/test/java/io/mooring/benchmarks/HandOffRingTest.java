package io.mooring.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.infra.Control;

/** The hand-off ring's waiting, which decides what the benchmark counts: JMH counts every invocation's batch. */
class HandOffRingTest {
    @Test
    void aSideThatMustWaitAfterTheIterationEndedGivesUpOnlyAfterAPark() {
        var ring = new HandOffRing();
        var control = new Control();
        control.stopMeasurement = true; // JMH's warm-down: the other side has stopped
        long emptyReturns = 0;
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(20);
        while (System.nanoTime() < end) {
            assertEquals(-1, ring.awaitBatch(control), "nothing was published");
            emptyReturns++;
        }
        // Each park lasts up to 1 ms: some 20 empty invocations, not the millions a return without a park counted.
        long counted = emptyReturns;
        assertTrue(counted <= 100, () -> counted + " empty invocations in 20 ms");
    }

    @Test
    void aPublishedBatchIsTakenAndTheRingRefillsAroundItsEnd() {
        var ring = new HandOffRing();
        var control = new Control();
        for (long n = 0; n < 3L * HandOffRing.CAPACITY; n += HandOffRing.BATCH) {
            assertEquals(n, ring.awaitRoom(control));
            ring.publish(n + HandOffRing.BATCH);
            assertEquals(n, ring.awaitBatch(control));
            ring.take(n + HandOffRing.BATCH);
        }
    }
}
