package io.mooring.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.EndReason;
import io.mooring.lease.Lease;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.testing.FaultPlan;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A revocation slowed down: the owner's QP of peer A's session holds its LOCAL_INVs back ({@link
 * FaultPlan#delayLocal}), as a NIC behind on its send queue would, while the owner ends A's lease; A keeps writing
 * through the lease's key and peer B keeps taking leases of the same size, each written with B's own bytes. Until
 * the invalidation has executed the key works, so A's writes must land in the ended lease's own block — which the
 * arena must not hand out again until then — and never in one of B's. A lease manager that gave the block back before
 * the invalidation completed grants it to B, and A's next write changes B's lease.
 */
class SlowRevocationTest {
    private static final int SIZE = 256;
    /** Far longer than a WRITE on a loaded machine, so that A's writes meet the window still bound. */
    private static final Duration DELAY = Duration.ofSeconds(1);
    private static final long WAIT_SECONDS = 20;
    private static final byte B_WROTE = 0x22;
    private static final byte A_WROTE = 0x6b;
    /**
     * B's leases taken while the invalidation is held back, at most: well within the per-peer limit (A and B share an
     * address, so one account), however many round trips fit in the delay.
     */
    private static final int MAX_TAKEN = 64;

    @Test
    @Timeout(60)
    void anEndedLeasesBlockIsNotGrantedAgainBeforeItsInvalidationCompletes() throws Exception {
        var graph = ResourceGraph.builder().name("slow-revocation").build();
        ProtectionDomain ownerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        RdmaArena ownerArena = ChaosRun.arena(ownerPd);
        ProtectionDomain aPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        RdmaArena aArena = ChaosRun.arena(aPd);
        ProtectionDomain bPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        RdmaArena bArena = ChaosRun.arena(bPd);
        Logger leaseLog = Logger.getLogger("io.mooring.lease");
        Level level = leaseLog.getLevel();
        leaseLog.setLevel(Level.OFF); // A's write after the invalidation loses its session on purpose
        int landed = 0;
        try (RdmaEndpoint owner = RdmaEndpoint.builder(ownerPd, ownerArena).build();
             RdmaListener listener = owner.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             RdmaEndpoint a = RdmaEndpoint.builder(aPd, aArena).build();
             RdmaEndpoint b = RdmaEndpoint.builder(bPd, bArena).build()) {
            RdmaSession[] sessionA = connect(a, listener);
            RdmaSession[] sessionB = connect(b, listener);
            RemoteSegment ended = sessionA[0].requestRemote(SIZE, ChaosRun.LONG, ChaosRun.RW);
            Lease lease = sessionA[1].leases().lease(ended.leaseId());
            List<RemoteSegment> taken = new ArrayList<>();
            try (Block aBytes = aArena.allocateShared(SIZE, 8);
                 Block bBytes = bArena.allocateShared(SIZE, 8);
                 var slow = sessionA[1].queuePair().injectFaults(FaultPlan.seeded(14).delayLocal(1, DELAY))) {
                aBytes.segment().fill(A_WROTE);
                bBytes.segment().fill(B_WROTE);
                WorkRequest lateWrite = WorkRequest.write(aBytes.region(), aBytes.regionOffset(), SIZE)
                        .remote(ended.address(), ended.rkey());
                CompletableFuture<Void> end = sessionA[1].leases().endAsync(lease, EndReason.RELEASED);
                // Until A's write is refused the invalidation has not executed: the block must stay the lease's.
                while (succeeds(sessionA[0], lateWrite)) {
                    landed++;
                    if (taken.size() == MAX_TAKEN) continue; // the block given back early is the next one granted
                    RemoteSegment s = sessionB[0].requestRemote(SIZE, ChaosRun.LONG, ChaosRun.RW);
                    s.write(bBytes, 0);
                    taken.add(s);
                }
                end.get(WAIT_SECONDS, TimeUnit.SECONDS);
                assertEquals(EndReason.RELEASED, lease.ended().join());
                assertEquals(1, slow.counts().of(FaultPlan.Fault.LOCAL_DELAY), slow::toString);
                for (RemoteSegment s : taken) {
                    Lease l = sessionB[1].leases().lease(s.leaseId());
                    byte[] now = l.block().segment().asSlice(l.offset(), SIZE).toArray(ValueLayout.JAVA_BYTE);
                    for (int i = 0; i < SIZE; i++) {
                        assertEquals(B_WROTE, now[i], "B's lease " + s.leaseId() + " at 0x"
                                + Long.toHexString(s.address()) + ", granted after A's lease ended, was written through"
                                + " A's key at byte " + i);
                    }
                    s.close();
                }
            }
            for (RdmaSession s : sessionA) s.close();
            for (RdmaSession s : sessionB) s.close();
        } finally {
            leaseLog.setLevel(level);
        }
        assertTrue(landed >= 1, "no write met the window before its invalidation: the test shows nothing");
        ownerArena.flushThreadCaches();
        assertEquals(0, ownerArena.stats().liveBlocks(), "owner blocks left");
        aArena.close();
        bArena.close();
        ownerArena.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
    }

    /** A peer's session and the owner's side of it. */
    private static RdmaSession[] connect(RdmaEndpoint peer, RdmaListener listener) throws Exception {
        CompletableFuture<RdmaSession> accepted = listener.acceptAsync();
        RdmaSession session = peer.connectAsync(listener.address()).get(WAIT_SECONDS, TimeUnit.SECONDS);
        return new RdmaSession[] {session, accepted.get(WAIT_SECONDS, TimeUnit.SECONDS)};
    }

    private static boolean succeeds(RdmaSession session, WorkRequest write) throws InterruptedException {
        try {
            return session.queuePair().postAsync(write).get(WAIT_SECONDS, TimeUnit.SECONDS).isSuccess();
        } catch (ExecutionException e) {
            return false; // refused: the window is invalidated, and the session is lost
        } catch (TimeoutException e) {
            throw new AssertionError("a write through the ended lease's key neither landed nor failed", e);
        }
    }
}
