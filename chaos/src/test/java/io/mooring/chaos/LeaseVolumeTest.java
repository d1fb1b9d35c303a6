package io.mooring.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.LeaseStats;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.ConnectOptions;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletionException;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.testing.FaultInjection;
import io.mooring.verbs.testing.FaultPlan;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Lease lifetimes at volume: four peers (two in-JVM, two over the TCP fabric), each on a thread of its own, each
 * through a device that drops, duplicates, reorders, corrupts and delays 0.2% of its packets, take a lease of a random
 * size, write it, read it back, and release it, again and again; every {@value #LATE_EVERY} lifetimes a peer writes
 * through the key of the lease it just released, which must fail (and cost it its session). At the end the owner's
 * counters must show every lease granted and released once, and nothing may be left.
 *
 * <p>{@code -Dmooring.chaos.lifetimes=N} (default 2,000) sets the lifetimes in all; {@code -Dmooring.chaos.seed}
 * the seed of the sizes, data and fault plans.
 */
@Timeout(7200)
class LeaseVolumeTest {
    private static final int LIFETIMES = Integer.getInteger("mooring.chaos.lifetimes", 2_000);
    private static final int PEERS = 4;
    private static final int LATE_EVERY = 250;
    private static final ConnectOptions OPTIONS = ConnectOptions.builder().ackTimeout(Duration.ofMillis(4)).build();

    @Test
    void everyLeaseLivesOnceAndItsKeyDiesWithIt() throws Exception {
        long seed = Long.getLong("mooring.chaos.seed", System.nanoTime());
        var graph = ResourceGraph.builder().name("lease-volume").build();
        ProtectionDomain ownerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        RdmaArena ownerArena = ChaosRun.arena(ownerPd);
        Logger leaseLog = Logger.getLogger("io.mooring.lease");
        Level level = leaseLog.getLevel();
        leaseLog.setLevel(Level.OFF); // the late writes lose sessions on purpose; each is asserted
        var lifetimes = new AtomicLong();
        var late = new AtomicLong();
        List<RdmaSession> ownerSides = java.util.Collections.synchronizedList(new ArrayList<>());
        List<FaultInjection> faults = new ArrayList<>();
        List<RdmaArena> peerArenas = new ArrayList<>();
        long started = System.nanoTime();
        try (RdmaEndpoint owner = RdmaEndpoint.builder(ownerPd, ownerArena).connectOptions(OPTIONS)
                .failureBackoff(Duration.ZERO).build();
             RdmaListener listener = owner.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            List<CompletableFuture<Void>> peers = new ArrayList<>();
            var seeds = new SplittableRandom(seed);
            for (int p = 0; p < PEERS; p++) {
                DeviceContext context = RdmaDevices.open(p % 2 == 0 ? "soft:soft0" : "soft:soft1", graph);
                ProtectionDomain pd = context.allocateProtectionDomain();
                RdmaArena arena = ChaosRun.arena(pd);
                peerArenas.add(arena);
                faults.add(context.injectFaults(FaultPlan.seeded(seeds.nextLong()).dropRequests(0.002)
                        .dropResponses(0.002).duplicate(0.002).reorder(0.002).corrupt(0.002)
                        .delay(0.002, Duration.ofMillis(1))));
                RdmaEndpoint endpoint = RdmaEndpoint.builder(pd, arena).connectOptions(OPTIONS).build();
                long peerSeed = seeds.nextLong();
                int share = LIFETIMES / PEERS + (p < LIFETIMES % PEERS ? 1 : 0);
                peers.add(CompletableFuture.runAsync(() -> {
                    try (endpoint) {
                        churn(endpoint, listener, ownerSides, arena, new SplittableRandom(peerSeed), share, lifetimes, late);
                    }
                }, r -> Thread.ofPlatform().name("lease-volume-peer").start(r)));
            }
            for (var peer : peers) peer.get(2, TimeUnit.HOURS);
            long granted = 0, released = 0, other = 0, active = 0;
            for (RdmaSession s : ownerSides) {
                LeaseStats stats = s.leases().stats();
                granted += stats.granted();
                released += stats.released();
                other += stats.expired() + stats.revoked();
                active += stats.active();
            }
            assertEquals(LIFETIMES, lifetimes.get());
            assertEquals(List.of((long) LIFETIMES, (long) LIFETIMES, 0L, 0L), List.of(granted, released, other, active),
                    "the owner's granted, released, otherwise ended, active");
        } finally {
            faults.forEach(FaultInjection::close);
            leaseLog.setLevel(level);
        }
        long millis = (System.nanoTime() - started) / 1_000_000;
        ownerArena.flushThreadCaches();
        assertEquals(0, ownerArena.stats().liveBlocks(), "owner blocks left");
        for (RdmaArena a : peerArenas) a.close();
        ownerArena.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
        var counts = new java.util.EnumMap<FaultPlan.Fault, Long>(FaultPlan.Fault.class);
        long packets = 0;
        for (FaultInjection f : faults) {
            packets += f.counts().packets();
            f.counts().faults().forEach((k, n) -> counts.merge(k, n, Long::sum));
        }
        System.out.println("lease volume, seed " + seed + ": " + lifetimes.get() + " lease lifetimes in " + millis
                + " ms, " + late.get() + " late writes refused, packets " + packets + " with faults " + counts);
    }

    /** One peer's share: take, write, read back, release; now and then a write through the key just released. */
    private static void churn(RdmaEndpoint endpoint, RdmaListener listener, List<RdmaSession> ownerSides,
                              RdmaArena arena, SplittableRandom random, int share, AtomicLong lifetimes, AtomicLong late) {
        RdmaSession session = connect(endpoint, listener, ownerSides);
        try {
            for (int i = 1; i <= share; i++) {
                int size = 1 + random.nextInt(4096);
                RemoteSegment lease = session.requestRemote(size, ChaosRun.LONG, ChaosRun.RW);
                byte[] data = new byte[size];
                random.nextBytes(data);
                try (Block out = arena.allocateShared(size, 8); Block in = arena.allocateShared(size, 8)) {
                    out.segment().copyFrom(java.lang.foreign.MemorySegment.ofArray(data));
                    lease.write(out, 0);
                    lease.read(in, 0);
                    assertEquals(-1, out.segment().mismatch(in.segment()),
                            "lease " + lease.leaseId() + " reads back what was written");
                }
                long address = lease.address();
                int rkey = lease.rkey();
                lease.close();
                lifetimes.incrementAndGet();
                if (i % LATE_EVERY == 0) {
                    WcStatus status;
                    try (Block src = arena.allocateShared(8, 8)) {
                        status = session.queuePair().postAsync(WorkRequest.write(src.region(), src.regionOffset(), 8)
                                .remote(address, rkey)).get(30, TimeUnit.SECONDS).status();
                    } catch (ExecutionException e) {
                        status = e.getCause() instanceof WorkCompletionException w ? w.status() : null;
                    }
                    assertNotEquals(WcStatus.SUCCESS, status, "a write through the released lease's key");
                    late.incrementAndGet();
                    session.close();
                    session = connect(endpoint, listener, ownerSides);
                }
            }
        } catch (Exception e) {
            throw new AssertionError(e);
        } finally {
            session.close();
        }
    }

    private static RdmaSession connect(RdmaEndpoint endpoint, RdmaListener listener, List<RdmaSession> ownerSides) {
        synchronized (listener) { // accept() hands out sessions in order: pair each with its own connect
            var accepted = listener.acceptAsync();
            RdmaSession session = endpoint.connectAsync(listener.address()).join();
            ownerSides.add(accepted.join());
            return session;
        }
    }
}
