package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.CapturedLog;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Lease after lease on one session leaves nothing behind: the owner's live blocks and the heap stay flat, and the
 * graph is empty once everything is closed. {@value #DEFAULT_LEASES} in the suite; {@code -Dmooring.lease.churn=100000} is the long
 * run of docs/verification.md, and {@code -Dmooring.lease.verbose=true} prints the figures.
 */
@Timeout(600)
class LeaseChurnTest {
    /** The sessions' INFO lines (peers closing, refusals) are expected; kept out of the build output. */
    @RegisterExtension
    final CapturedLog log = new CapturedLog("io.mooring.lease");

    private static final int DEFAULT_LEASES = 5_000;
    private static final int LEASES = Integer.getInteger("mooring.lease.churn", DEFAULT_LEASES);

    @Test
    void grantAndReleaseLeaveNothingBehind() throws Exception {
        var graph = ResourceGraph.builder().name("churn").build();
        ProtectionDomain ownerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        ProtectionDomain peerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        RdmaArena ownerArena = RdmaArena.builder(ownerPd).access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
        RdmaArena peerArena = RdmaArena.builder(peerPd).access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
        try (var owner = RdmaEndpoint.builder(ownerPd, ownerArena).build();
             var listener = owner.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             var peer = RdmaEndpoint.builder(peerPd, peerArena).build()) {
            var accepted = listener.acceptAsync();
            RdmaSession requester = peer.connectAsync(listener.address()).get(10, TimeUnit.SECONDS);
            RdmaSession session = accepted.get(10, TimeUnit.SECONDS);
            var write = EnumSet.of(Access.REMOTE_WRITE);
            for (int i = 0; i < 500; i++) requester.requestRemote(64, Duration.ofSeconds(30), write).close(); // warm up
            long blocks = ownerArena.stats().liveBlocks();
            long heap = usedHeap();
            long start = System.nanoTime();
            for (int i = 0; i < LEASES; i++) {
                requester.requestRemote(64 + (i & 1023), Duration.ofSeconds(30), write).close();
            }
            long nanos = System.nanoTime() - start;
            long heapGrowth = usedHeap() - heap;
            assertEquals(0, session.leases().stats().active());
            assertEquals(blocks, ownerArena.stats().liveBlocks(), "every leased block came back");
            assertTrue(heapGrowth < 16 << 20, "the heap grew by " + heapGrowth + " bytes over " + LEASES + " leases");
            if (Boolean.getBoolean("mooring.lease.verbose")) {
                System.out.printf("%d lease grant+release round trips: %.1f µs each, heap %+d KiB, live blocks"
                        + " unchanged%n", LEASES, nanos / 1e3 / LEASES, heapGrowth / 1024);
            }
        }
        ownerArena.close();
        peerArena.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
    }

    private static long usedHeap() {
        System.gc();
        return Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory();
    }
}
