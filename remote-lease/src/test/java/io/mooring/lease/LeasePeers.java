package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.CompletionDispatcher;
import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletionException;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.QpCapabilities;
import java.lang.foreign.Arena;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * The owner's side of leases against a peer QP, for tests: two contexts of {@link #device()}, a connected QP each
 * (completions dispatched), the owner's arena and a 64-byte source region of the peer filled with 0x7e.
 */
abstract class LeasePeers {
    static final Set<Access> WRITE = EnumSet.of(Access.REMOTE_WRITE);

    ResourceGraph graph;
    Arena memory;
    RdmaArena arena;
    QueuePair ownerQp;
    QueuePair peerQp;
    MemoryRegion peerSource;

    /** The device both sides open, e.g. {@code soft:soft0}. */
    abstract String device();

    @BeforeEach
    void connect() {
        graph = ResourceGraph.builder().name("leases").build();
        memory = Arena.ofShared();
        DeviceContext owner = RdmaDevices.open(device(), graph);
        DeviceContext peer = RdmaDevices.open(device(), graph);
        ProtectionDomain ownerPd = owner.allocateProtectionDomain();
        ProtectionDomain peerPd = peer.allocateProtectionDomain();
        CompletionQueue ownerCq = owner.createCompletionQueue(256);
        CompletionQueue peerCq = peer.createCompletionQueue(256);
        ownerCq.startDispatcher(CompletionDispatcher.Mode.EVENTS, wc -> {});
        peerCq.startDispatcher(CompletionDispatcher.Mode.EVENTS, wc -> {});
        ownerQp = ownerPd.createQueuePair(ownerCq, ownerCq, QpCapabilities.DEFAULT);
        peerQp = peerPd.createQueuePair(peerCq, peerCq, QpCapabilities.DEFAULT);
        ownerQp.connect(peerQp.info());
        peerQp.connect(ownerQp.info());
        arena = RdmaArena.builder(ownerPd).chunkSize(1 << 20).shards(1)
                .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
        peerSource = peerPd.register(memory.allocate(64, 8), EnumSet.of(Access.LOCAL_WRITE));
        peerSource.segment().fill((byte) 0x7e);
    }

    @AfterEach
    void teardown() {
        arena.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
        memory.close();
    }

    /** A WRITE of {@code length} bytes by the peer at {@code address} through {@code rkey}. */
    WcStatus peerWrite(long address, int rkey, int length) {
        try {
            return peerQp.postAsync(WorkRequest.write(peerSource, 0, length).remote(address, rkey))
                    .get(20, TimeUnit.SECONDS).status();
        } catch (java.util.concurrent.ExecutionException e) {
            return ((WorkCompletionException) e.getCause()).status();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }
}
