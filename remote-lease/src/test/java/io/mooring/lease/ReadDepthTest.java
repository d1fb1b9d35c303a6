package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.CapturedLog;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.QpAttributes;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.EnumSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A session's data QP has as many READs and atomics outstanding as both devices take (capped at
 * {@value SessionLink#MAX_READ_DEPTH}), not {@code ConnectOptions.DEFAULT}'s 1 (issue 26: one READ in flight per
 * session on a NIC, whatever the application did). The soft devices allow 128 each way.
 */
class ReadDepthTest {
    @RegisterExtension
    final CapturedLog log = new CapturedLog(RdmaSession.class.getPackageName());

    private final ResourceGraph graph = ResourceGraph.builder().name("depth").build();
    /** The devices, as {@link RdmaSessionTest} takes them (ibv:rxe0 in the VM). */
    private static final String OWNER_DEVICE = System.getProperty("mooring.lease.test.owner", "soft:soft0");
    private static final String PEER_DEVICE = System.getProperty("mooring.lease.test.requester", "soft:soft1");

    private final ProtectionDomain ownerPd = RdmaDevices.open(OWNER_DEVICE, graph).allocateProtectionDomain();
    private final RdmaArena ownerArena = RdmaArena.builder(ownerPd).chunkSize(1 << 20).shards(1)
            .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
    private final RdmaEndpoint ownerEndpoint = RdmaEndpoint.builder(ownerPd, ownerArena).build();

    @AfterEach
    void teardown() {
        ownerEndpoint.close();
        ownerArena.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
    }

    @Test
    void bothSidesOfASessionUseTheDeepestReadQueueBothDevicesTake() throws Exception {
        ProtectionDomain peerPd = RdmaDevices.open(PEER_DEVICE, graph).allocateProtectionDomain();
        try (RdmaArena peerArena = RdmaArena.builder(peerPd).chunkSize(1 << 20).shards(1)
                     .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
             RdmaEndpoint peerEndpoint = RdmaEndpoint.builder(peerPd, peerArena).build();
             var listener = ownerEndpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            var accepted = listener.acceptAsync();
            try (RdmaSession peer = peerEndpoint.connectAsync(listener.address()).get(30, TimeUnit.SECONDS);
                 RdmaSession owner = accepted.get(30, TimeUnit.SECONDS)) {
                for (RdmaSession side : new RdmaSession[] {peer, owner}) {
                    QpAttributes data = side.queuePair().query();
                    assertEquals(SessionLink.MAX_READ_DEPTH, data.maxRdAtomic(), side + ": READs it may have out");
                    assertEquals(SessionLink.MAX_READ_DEPTH, data.maxDestRdAtomic(), side + ": READs it takes in");
                }
            }
        }
    }

    /** A peer whose device allows one READ each way gets one: the owner takes the smaller of the two depths. */
    @Test
    void aPeerAllowingOneReadGetsOne() throws Exception {
        ProtectionDomain peerPd = RdmaDevices.open(OWNER_DEVICE, graph).allocateProtectionDomain();
        try (var listener = ownerEndpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            var accepted = listener.acceptAsync();
            RawPeer peer = new RawPeer(peerPd, listener.address()); // offers depths of 1 out and 1 in
            try (RdmaSession owner = accepted.get(30, TimeUnit.SECONDS)) {
                QpAttributes data = owner.queuePair().query();
                assertEquals(1, data.maxRdAtomic());
                assertEquals(1, data.maxDestRdAtomic());
            } finally {
                peer.close();
            }
        }
    }
}
