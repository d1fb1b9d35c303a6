package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.HeapAfterGc;
import io.mooring.verbs.soft.SoftInternals;
import io.mooring.verbs.soft.SoftProvider;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.QpCapabilities;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A soft QP costs what it uses, not what its depth allows (issue 26, finding 9: each QP made every send slot's work
 * entry and arrays up front, ~190 KiB per session end): work queue entries and in-flight slots grow with the requests
 * outstanding at once, and an idle QP keeps no requester thread. A queue that has grown still refuses past its depth.
 */
@Timeout(120)
class SoftQpFootprintTest {
    private static final QpCapabilities DEEP = QpCapabilities.builder().maxSendWr(256).maxRecvWr(256).maxSendSge(1)
            .maxRecvSge(1).maxInlineData(0).build();

    private final ResourceGraph graph = ResourceGraph.builder().name("footprint").build();
    private final Arena memory = Arena.ofShared();
    private final DeviceContext context = RdmaDevices.open("soft:soft0", graph);
    private final ProtectionDomain pd = context.allocateProtectionDomain();
    private final CompletionQueue cq = context.createCompletionQueue(1024);
    private final MemoryRegion region = pd.register(memory.allocate(64, 64), EnumSet.allOf(Access.class));
    private final WorkRequest write = WorkRequest.write(region, 0, 64).remote(region.address(), region.rkey());

    @AfterEach
    void close() {
        graph.close();
        memory.close();
        assertEquals(0, graph.liveCount(), graph::dump);
    }

    /** Two connected QPs with deep queues. */
    private QueuePair[] pair() {
        return pair(DEEP);
    }

    private QueuePair[] pair(QpCapabilities capabilities) {
        QueuePair a = pd.createQueuePair(cq, cq, capabilities);
        QueuePair b = pd.createQueuePair(cq, cq, capabilities);
        QpInfo infoA = a.info();
        a.connect(b.info());
        b.connect(infoA);
        return new QueuePair[] {a, b};
    }

    @Test
    void aDeepQueueThatKeepsFewRequestsHoldsLittleHeap() throws Exception {
        int pairs = 200;
        List<QueuePair[]> made = new ArrayList<>();
        made.add(pair()); // classes and what a first QP makes once
        Endpoint.next(postAndAwait(made.getFirst()[0]));
        long before = HeapAfterGc.bytes();
        for (int i = 0; i < pairs; i++) {
            QueuePair[] p = pair();
            made.add(p);
            for (int round = 0; round < 300; round++) Endpoint.next(postAndAwait(p[0])); // every slot of a ring once
        }
        Thread.sleep(2 * SoftInternals.requesterIdleMillis()); // the requesters' threads end, and their stacks go
        long perQp = (HeapAfterGc.bytes() - before) / (2L * pairs);
        assertTrue(perQp < 4096, "a connected QP with queues of 256 costs " + perQp + " bytes of heap");
    }

    private CompletionQueue postAndAwait(QueuePair qp) {
        qp.post(write);
        return cq;
    }

    /** Platform requesters here, which {@link Thread#getAllStackTraces()} lists (virtual ones are not listed). */
    @Test
    void anIdleQpKeepsNoThreadAndItsNextRequestStartsOne() throws Exception {
        System.setProperty(SoftProvider.PLATFORM_REQUESTERS_PROPERTY, "true"); // read as each QP is created
        QueuePair a;
        try {
            a = pair()[0];
        } finally {
            System.clearProperty(SoftProvider.PLATFORM_REQUESTERS_PROPERTY);
        }
        String name = "soft-qp-" + a.number();
        for (int round = 0; round < 3; round++) {
            Endpoint.next(postAndAwait(a));
            long deadline = System.nanoTime() + 50 * SoftInternals.requesterIdleMillis() * 1_000_000L;
            while (threadsNamed(name) > 0 && System.nanoTime() < deadline) Thread.sleep(10);
            assertEquals(0, threadsNamed(name), "requester threads after a QP was idle");
        }
    }

    /** Requests nobody polled hold their slots: the queue, grown from a few slots to its depth, refuses the next. */
    @Test
    void aQueueGrownUnderLoadStillRefusesPastItsDepth() {
        QueuePair a = pair(DEEP.toBuilder().maxSendWr(8).maxRecvWr(1).build())[0];
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < 8; i++) a.post(write);
            assertThrows(QueueFullException.class, () -> a.post(write));
            assertEquals(8, a.outstandingSends());
            for (int i = 0; i < 8; i++) assertTrue(Endpoint.next(cq).isSuccess());
            assertEquals(0, a.outstandingSends());
        }
    }

    private static long threadsNamed(String name) {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals(name)).count();
    }
}
