package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The interleavings that a shared receive queue's stack of returned slots exists for, made deterministic: pollers
 * push retired slots with a compare-and-set, a poster takes the whole stack at once. One poller is held inside its
 * push, between reading the top and its compare-and-set, while another poller pushes or a poster collects; every
 * slot must then come back exactly once — none lost, none handed to two receives. And a completion of a slot's
 * previous use (the ABA of a reused slot) must retire nothing.
 */
@Timeout(30)
class SrqFreeStackRaceTest {
    private static final ScatterGatherList NO_REGIONS = new WorkRequest().sgl();
    private static final long SLOT_MASK = (1L << 24) - 1;

    private final SrqInFlight queue = new SrqInFlight("srq", 2, new SrqInFlight.Table());
    private final CountDownLatch entered = new CountDownLatch(1);
    private final CountDownLatch release = new CountDownLatch(1);
    private Thread held; // the poller held inside its first push

    /** Starts a poller retiring {@code id} and returns once it is inside its push, its compare-and-set to come. */
    private Thread holdInsidePush(long id) throws InterruptedException {
        held = Thread.ofVirtual().unstarted(() -> assertTrue(queue.retire(id, true, new RequestSlots.Retired())));
        queue.insidePush = () -> {
            if (Thread.currentThread() != held || entered.getCount() == 0) return;
            entered.countDown();
            try {
                assertTrue(release.await(20, TimeUnit.SECONDS));
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        };
        held.start();
        assertTrue(entered.await(20, TimeUnit.SECONDS));
        return held;
    }

    private void finishHeldPush() throws InterruptedException {
        release.countDown();
        held.join();
    }

    private long claim(long wrId) {
        queue.lock.lock();
        try {
            return queue.claim(wrId, NO_REGIONS, null);
        } finally {
            queue.lock.unlock();
        }
    }

    private boolean retire(long id) {
        return queue.retire(id, true, new RequestSlots.Retired());
    }

    private static long slot(long id) {
        return id & SLOT_MASK;
    }

    /** Both slots are free again, once each: two receives take them, a third finds the queue full. */
    private void assertBothSlotsFreeOnce() {
        assertEquals(0, queue.outstanding());
        long c = claim(3);
        long d = claim(4);
        assertNotEquals(slot(c), slot(d), "two receives got one slot");
        assertThrows(QueueFullException.class, () -> claim(5));
        assertEquals(2, queue.outstanding());
    }

    @Test
    void aPushRacingAnotherPushLosesNeitherSlot() throws Exception {
        long a = claim(1);
        long b = claim(2);
        holdInsidePush(a); // has read an empty stack
        assertTrue(retire(b)); // pushes onto it meanwhile
        finishHeldPush(); // its compare-and-set fails and it pushes again, onto b's slot
        assertBothSlotsFreeOnce();
    }

    @Test
    void aCollectRacingAPushHandsNoSlotOutTwice() throws Exception {
        long a = claim(1);
        long b = claim(2);
        assertTrue(retire(b));
        holdInsidePush(a); // has read the stack holding b's slot, and linked a's slot to it
        long c = claim(3); // no free slot: collects the stack, takes b's slot
        assertEquals(slot(b), slot(c));
        finishHeldPush(); // must not put back the link to b's slot, which c holds now
        assertEquals(1, queue.outstanding());
        long d = claim(4);
        assertNotEquals(slot(c), slot(d), "a slot collected twice");
        assertThrows(QueueFullException.class, () -> claim(5));
        assertTrue(retire(c));
        assertTrue(retire(d));
        assertBothSlotsFreeOnce();
    }

    @Test
    void aCompletionOfASlotsPreviousUseRetiresNothing() {
        long a = claim(1);
        long b = claim(2);
        assertTrue(retire(a));
        long again = claim(3); // collects a's slot: its next use
        assertEquals(slot(a), slot(again));
        assertFalse(retire(a), "a completion left over from the slot's previous use");
        assertFalse(retire(a), "and again");
        assertEquals(2, queue.outstanding());
        assertTrue(retire(again));
        assertTrue(retire(b));
        assertFalse(retire(b), "a duplicate completion");
        assertBothSlotsFreeOnce();
    }
}
