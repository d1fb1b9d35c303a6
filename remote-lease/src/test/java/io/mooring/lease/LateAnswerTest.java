package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.mooring.lifecycle.MooringTimeoutException;
import io.mooring.verbs.testing.FaultPlan;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * An owner that answers a request after the holder gave up on it: the request failed with a timeout, and what the late
 * answer made is not left for the owner to count until it expires.
 */
@Timeout(120)
class LateAnswerTest extends EndpointPeers {
    /**
     * The owner's window bind is held back past the holder's request timeout, so its GRANT comes late: the holder
     * releases that lease as it arrives, and the owner stops counting it against the peer's limits at once — not
     * after the lease's 60 s.
     */
    @Test
    void aLeaseGrantedAfterItsRequestTimedOutIsReleasedAtOnce() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).isolation(Isolation.WINDOW));
        var accepted = listener.acceptAsync();
        try (RdmaEndpoint impatient = RdmaEndpoint.builder(peerPd, peerArena).requestTimeout(Duration.ofMillis(200))
                .build()) {
            RdmaSession holder = impatient.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
            RdmaSession owner = accepted.get(10, TimeUnit.SECONDS);
            try (var slow = owner.queuePair().injectFaults(FaultPlan.seeded(29).delayLocal(1, Duration.ofSeconds(1)))) {
                var request = holder.requestRemoteAsync(4096, Duration.ofSeconds(60), RW);
                var e = assertThrows(ExecutionException.class, () -> request.get(10, TimeUnit.SECONDS));
                assertInstanceOf(MooringTimeoutException.class, e.getCause());

                LeaseManager leases = owner.leases();
                awaitTrue(() -> leases.stats().granted() == 1, "the late grant");
                awaitTrue(() -> leases.stats().released() == 1 && leases.stats().active() == 0,
                        "the holder to release the lease granted late");
                assertEquals(0, leases.stats().expired());
                assertEquals(null, holder.lostReason(), "the session goes on");
                assertEquals(null, owner.lostReason());
                assertEquals(2, slow.counts().of(FaultPlan.Fault.LOCAL_DELAY), "the bind and the invalidation");
            }
        }
    }

    /**
     * Only a GRANT answering a REQUEST of this side's that timed out is released: one for a request never made (a
     * hostile owner's) gets no RELEASE, so such GRANTs cannot fill this side's outbox, which does not count RELEASEs.
     */
    @Test
    void onlyAGrantForARequestThatTimedOutIsReleased() throws Exception {
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).requestTimeout(Duration.ofMillis(200)));
        var accepted = listener.acceptAsync();
        try (RawPeer owner = new RawPeer(peerPd, listener.address())) {
            RdmaSession holder = accepted.get(10, TimeUnit.SECONDS);
            var request = holder.requestRemoteAsync(64, Duration.ofSeconds(30), RW);
            long id = HostilePeerTest.requestOf(owner).requestId();
            var e = assertThrows(ExecutionException.class, () -> request.get(10, TimeUnit.SECONDS));
            assertInstanceOf(MooringTimeoutException.class, e.getCause());

            long nanos = Duration.ofSeconds(30).toNanos();
            owner.send(new Message.Grant(id + 1000, 8, 0x1000, 64, 1, nanos)); // never requested
            owner.send(new Message.Grant(id, 7, 0x1000, 64, 1, nanos));
            owner.send(new Message.Grant(id, 9, 0x1000, 64, 1, nanos)); // twice: released once is all it takes
            List<Long> released = owner.everything(Duration.ofSeconds(1)).stream()
                    .filter(m -> m instanceof Message.Release).map(m -> ((Message.Release) m).leaseId()).toList();
            assertEquals(List.of(7L), released);
            assertEquals(null, holder.lostReason());
        }
    }
}
