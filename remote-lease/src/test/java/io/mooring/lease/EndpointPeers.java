package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.CapturedLog;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletionException;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An owner's endpoint and a peer's on the soft provider, for tests of what the owner's endpoint does with its peers:
 * each side a PD and an arena; the owner listens on loopback; everything closed (and checked freed) after each test.
 */
abstract class EndpointPeers {
    static final Set<Access> RW = EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE);

    /** The sessions' lines (peers closing, refusals, losses) are expected; kept out of the build output. */
    @RegisterExtension
    final CapturedLog log = new CapturedLog(RdmaSession.class.getPackageName());

    final ResourceGraph graph = ResourceGraph.builder().name(getClass().getSimpleName()).build();
    final ProtectionDomain ownerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
    final ProtectionDomain peerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
    final RdmaArena ownerArena = arena(ownerPd);
    final RdmaArena peerArena = arena(peerPd);
    private final List<AutoCloseable> closeLast = new ArrayList<>();
    RdmaEndpoint ownerEndpoint;

    private static RdmaArena arena(ProtectionDomain pd) {
        return RdmaArena.builder(pd).chunkSize(1 << 20).shards(1).access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND))
                .build();
    }

    @AfterEach
    void teardown() throws Exception {
        for (AutoCloseable c : closeLast.reversed()) c.close();
        ownerArena.close();
        peerArena.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
    }

    /** Builds the owner's endpoint and listens on loopback. */
    RdmaListener listen(RdmaEndpoint.Builder builder) throws Exception {
        ownerEndpoint = builder.build();
        closeLast.add(ownerEndpoint);
        RdmaListener listener = ownerEndpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        closeLast.add(listener);
        return listener;
    }

    RdmaEndpoint peerEndpoint() {
        RdmaEndpoint endpoint = RdmaEndpoint.builder(peerPd, peerArena).build();
        closeLast.add(endpoint);
        return endpoint;
    }

    /** Leases 64 bytes over {@code requester} and WRITEs just past them with the raw QP, as a key guess would. */
    RemoteSegment guessPastALease(RdmaSession requester) throws Exception {
        RemoteSegment lease = requester.requestRemote(64, Duration.ofSeconds(30), RW);
        try (Block src = peerArena.allocateShared(8, 8)) {
            var guess = requester.queuePair().postAsync(WorkRequest.write(src.region(), src.regionOffset(), 8)
                    .remote(lease.address() + 64, lease.rkey()));
            var failed = assertThrows(ExecutionException.class, () -> guess.get(10, TimeUnit.SECONDS));
            assertEquals(WcStatus.REM_ACCESS_ERR, ((WorkCompletionException) failed.getCause()).status());
        }
        return lease;
    }

    static void awaitTrue(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("waited 30 s for " + what);
            Thread.sleep(10);
        }
    }
}
