package io.mooring.benchmarks;

import io.mooring.allocator.RdmaArena;
import io.mooring.lease.Isolation;
import io.mooring.lease.LeaseStats;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaSession;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.EnumSet;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Two connected {@link RdmaSession}s in this JVM over the soft provider ({@code soft0} on both sides: the in-JVM
 * link, the least noisy transport), each with its own default arena: the owner grants, the requester leases.
 * One subclass per isolation, so that each benchmark names the one it measures.
 *
 * <p>Teardown fails the benchmark if a lease is still active or ended other than once, or if closing the graph
 * leaves a resource behind.
 */
@State(Scope.Benchmark)
public class LeaseSessions {
    ResourceGraph graph;
    RdmaArena ownerArena;
    RdmaArena requesterArena;
    RdmaEndpoint ownerEndpoint;
    RdmaEndpoint requesterEndpoint;
    RdmaSession owner;
    RdmaSession requester;

    /** Leases through pooled type 2 memory windows (what the soft provider's probe chooses). */
    public static class Window extends LeaseSessions {
        @Override
        Isolation isolation() {
            return Isolation.WINDOW;
        }
    }

    /** Leases through a registration of each block (what rxe gets: its windows do not enforce bounds). */
    public static class Dedicated extends LeaseSessions {
        @Override
        Isolation isolation() {
            return Isolation.DEDICATED_REGISTRATION;
        }
    }

    Isolation isolation() {
        return Isolation.WINDOW;
    }

    @Setup(Level.Trial)
    public void open() {
        Fairness.checkWorkerThread();
        // Closing one session is reported at INFO by the other ("the peer closed the session"):
        // ordinary at teardown, and it would land in the middle of JMH's output.
        var log = java.util.logging.Logger.getLogger(RdmaSession.class.getPackageName());
        if (log.getLevel() == null || log.getLevel().intValue() < java.util.logging.Level.WARNING.intValue()) {
            log.setLevel(java.util.logging.Level.WARNING);
        }
        graph = ResourceGraph.builder().name("lease-benchmark").build();
        ProtectionDomain ownerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        ProtectionDomain requesterPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        ownerArena = arena(ownerPd, "owner");
        requesterArena = arena(requesterPd, "requester");
        ownerEndpoint = RdmaEndpoint.builder(ownerPd, ownerArena).isolation(isolation()).build();
        requesterEndpoint = RdmaEndpoint.builder(requesterPd, requesterArena).isolation(isolation()).build();
        try (var listener = ownerEndpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            var accepted = listener.acceptAsync();
            requester = requesterEndpoint.connectAsync(listener.address()).join();
            owner = accepted.join();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        started();
    }

    /** What a subclass sets up once the sessions are connected (JMH runs only this class's setup methods). */
    void started() {}

    /** What a subclass tears down before the sessions close. */
    void stopping() {}

    private static RdmaArena arena(ProtectionDomain pd, String name) {
        return RdmaArena.builder(pd).name(name).access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
    }

    @TearDown(Level.Trial)
    public void close() {
        stopping();
        LeaseStats stats = owner.leases().stats();
        requester.close();
        owner.close();
        requesterEndpoint.close();
        ownerEndpoint.close();
        ownerArena.close();
        requesterArena.close();
        graph.close();
        if (stats.active() != 0 || stats.granted() != stats.released() + stats.expired() + stats.revoked()) {
            throw new IllegalStateException("the benchmark left leases behind: " + stats);
        }
        if (graph.liveCount() != 0) throw new IllegalStateException("left behind:\n" + graph.dump());
    }
}
