package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.CapturedLog;
import io.mooring.testing.HeapAfterGc;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Raw peers that connect, send a window of lease requests and vanish — the connection dropped without a goodbye, their
 * QPs and CQ never closed — over and over (issue 26, finding 7: the heap of the JVM holding both sides grew by ~190
 * KiB per cycle). The growth was the peer's side: each vanished peer's QPs wait on the heap for the graph's Cleaner,
 * and each held its whole queue depth of soft work entries and in-flight slots, made up front. Here they are kept
 * reachable until the count (when the Cleaner runs is the GC's business): sessions end, and the heap after garbage
 * collection grows by what a vanished peer's handles hold until they are reclaimed (~24 KiB, most of it its CQ).
 */
@Timeout(300)
class RawPeerChurnTest {
    @RegisterExtension
    final CapturedLog log = new CapturedLog(RdmaSession.class.getPackageName());
    /** The vanished peers' handles are reported as leaks, as they should be. */
    @RegisterExtension
    final CapturedLog leaks = new CapturedLog(ResourceGraph.class.getPackageName());

    private static final int CYCLES = Integer.getInteger("mooring.lease.churnCycles", 200);
    private static final int WARM_UP = 50;

    @Test
    void abruptDisconnectsWithRequestsInFlightLeaveTheHeapFlat() throws Exception {
        var graph = ResourceGraph.builder().name("churn").build();
        ProtectionDomain ownerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        ProtectionDomain peerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        RdmaArena ownerArena = RdmaArena.builder(ownerPd).chunkSize(1 << 20).shards(1)
                .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
        long heapAtWarmUp = 0;
        List<RawPeer> vanished = new ArrayList<>();
        try (var owner = RdmaEndpoint.builder(ownerPd, ownerArena).failureBackoff(Duration.ZERO).build();
             var listener = owner.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            long minute = Duration.ofMinutes(1).toNanos();
            for (int cycle = 0; cycle < WARM_UP + CYCLES; cycle++) {
                if (cycle == WARM_UP) heapAtWarmUp = HeapAfterGc.bytes();
                var accepted = listener.acceptAsync();
                RawPeer peer = new RawPeer(peerPd, listener.address());
                if (cycle >= WARM_UP) vanished.add(peer); // until the count: the Cleaner's timing is the GC's
                accepted.get(10, TimeUnit.SECONDS);
                for (int id = 1; id <= 4; id++) {
                    peer.send(new Message.Request(id, 64, 8, Access.mask(EnumSet.of(Access.REMOTE_READ)), minute));
                }
                peer.hangUp(); // with the answers in flight, no goodbye, its QPs left to the Cleaner
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!owner.sessions().isEmpty() && System.nanoTime() < deadline) Thread.sleep(10);
            assertEquals(0, owner.sessions().size(), "sessions left");
            long perCycle = (HeapAfterGc.bytes() - heapAtWarmUp) / CYCLES;
            if (Boolean.getBoolean("mooring.lease.verbose")) {
                System.out.printf("%d raw peers dropped: heap %+d B per cycle%n", CYCLES, perCycle);
            }
            vanished.clear();
            // A vanished peer's CQ of 256 entries alone is ~9 KiB; its QPs held ~170 KiB each before.
            assertTrue(perCycle < 64 * 1024, "the heap grew by " + perCycle + " bytes per connect and drop");
        }
        ownerArena.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
    }
}
