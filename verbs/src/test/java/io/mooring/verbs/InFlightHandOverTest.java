package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.verbs.values.WcOpcode;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The one interleaving that the compare-and-set on a slot's state word exists for, made deterministic: a discard
 * (reset, destroy) reaching a slot that the CQ's poller is retiring, and the poller reaching one a discard is
 * emptying. The request's outcome blocks its first run, holding the slot in the middle of its retirement; whoever
 * comes second must leave the slot alone, so the outcome runs once and the slot is free once.
 */
@Timeout(30)
class InFlightHandOverTest {
    private static final ScatterGatherList NO_REGIONS = new WorkRequest().sgl();

    /** A ring of two slots holding one request whose outcome's first run waits for {@link #release}; runs counted. */
    private static final class Held {
        final InFlight ring = new InFlight("send", false, 2);
        final AtomicInteger runs = new AtomicInteger();
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        final long id = claim(ring, 7, success -> {
            if (runs.incrementAndGet() > 1) return;
            entered.countDown();
            try {
                assertTrue(release.await(20, TimeUnit.SECONDS));
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });

        void awaitEntered() throws InterruptedException {
            assertTrue(entered.await(20, TimeUnit.SECONDS));
        }

        /** Lets the held outcome finish; then it must have run once, and both slots be free once. */
        void releaseAndCheck(Thread other) throws InterruptedException {
            release.countDown();
            other.join();
            assertEquals(1, runs.get(), "the outcome ran once");
            assertEquals(0, ring.outstanding());
            claim(ring, 8, null);
            claim(ring, 9, null);
            assertEquals(2, ring.outstanding());
        }
    }

    private static long claim(InFlight ring, long wrId, InFlight.Outcome outcome) {
        ring.lock.lock();
        try {
            return ring.claim("ibv_post_send", "qp", wrId, WcOpcode.RDMA_WRITE, NO_REGIONS, null, null, outcome);
        } finally {
            ring.lock.unlock();
        }
    }

    @Test
    void aDiscardLeavesTheSlotThePollerIsRetiring() throws Exception {
        var held = new Held();
        var retired = new RequestSlots.Retired();
        var retiredIt = new boolean[1];
        Thread poller = Thread.ofVirtual().start(() -> retiredIt[0] = held.ring.retire(held.id, true, retired));
        held.awaitEntered();
        held.ring.discardAll(new QpResetException("qp"), false); // the poller holds the slot: nothing of it is the discard's
        held.releaseAndCheck(poller);
        assertTrue(retiredIt[0]);
        assertEquals(7, retired.userWrId);
    }

    @Test
    void thePollerLeavesTheSlotADiscardIsEmptying() throws Exception {
        var held = new Held();
        Thread discarder = Thread.ofVirtual().start(() -> held.ring.discardAll(new QpResetException("qp"), false));
        held.awaitEntered();
        assertFalse(held.ring.retire(held.id, true, new RequestSlots.Retired()), "a completion of a discarded request");
        held.releaseAndCheck(discarder);
    }
}
