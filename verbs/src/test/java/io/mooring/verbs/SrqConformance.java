package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.lifecycle.ResourceState;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.DeviceAttributes;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.SrqAttributes;
import io.mooring.verbs.values.WcOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What a shared receive queue does on every provider, written once: a server side whose {@link #PEERS} QPs take
 * their receives from one SRQ, each connected to a client QP of its own. Each subclass supplies the two device
 * contexts and inherits every test.
 */
abstract class SrqConformance {
    static final int PEERS = 3;
    static final int DEPTH = 16;
    static final Duration WAIT = Endpoint.WAIT;
    private static final QpCapabilities CAPS = QpCapabilities.builder().maxSendWr(16).maxRecvWr(16).maxSendSge(1)
            .maxRecvSge(1).maxInlineData(0).build();

    ResourceGraph graph;
    Arena arena;
    DeviceContext serverContext;
    DeviceContext clientContext;
    ProtectionDomain serverPd;
    ProtectionDomain clientPd;
    CompletionQueue serverCq;
    CompletionQueue clientCq;
    SharedReceiveQueue srq;
    MemoryRegion inbox;
    MemoryRegion outbox;
    final QueuePair[] server = new QueuePair[PEERS];
    final QueuePair[] client = new QueuePair[PEERS];

    /** Opens the device of the QPs on the SRQ. */
    abstract DeviceContext openServer(ResourceGraph graph);

    /** Opens the device of their peers (may be the same device). */
    abstract DeviceContext openClient(ResourceGraph graph);

    @BeforeEach
    void connect() {
        graph = ResourceGraph.builder().name(getClass().getSimpleName()).build();
        arena = Arena.ofShared();
        serverContext = openServer(graph);
        clientContext = openClient(graph);
        serverPd = serverContext.allocateProtectionDomain();
        clientPd = clientContext.allocateProtectionDomain();
        serverCq = serverContext.createCompletionQueue(256);
        clientCq = clientContext.createCompletionQueue(256);
        srq = serverPd.createSharedReceiveQueue(SrqAttributes.builder().maxWr(DEPTH).build());
        inbox = serverPd.register(arena.allocate(8L * DEPTH, 64), Set.of(Access.LOCAL_WRITE));
        outbox = clientPd.register(arena.allocate(8L * DEPTH, 64), Set.of(Access.LOCAL_WRITE));
        for (int i = 0; i < PEERS; i++) {
            server[i] = serverPd.createQueuePair(serverCq, serverCq, CAPS, srq);
            client[i] = clientPd.createQueuePair(clientCq, clientCq, CAPS);
            connect(server[i], client[i]);
        }
    }

    private static void connect(QueuePair a, QueuePair b) {
        QpInfo ia = a.info(VerbsConformance.FAST);
        QpInfo ib = b.info(VerbsConformance.FAST);
        a.connect(ib, VerbsConformance.FAST);
        b.connect(ia, VerbsConformance.FAST);
    }

    @AfterEach
    void teardown() {
        graph.close(); // through the lifecycle graph: any EBUSY would surface here as a DestroyFailedException
        assertEquals(0, graph.liveCount(), graph::dump);
        arena.close();
    }

    // ---- helpers ---------------------------------------------------------------------------------------------

    /** Posts a receive of 8 bytes into slot {@code slot} of the inbox, with wrId 100 + slot. */
    ReceiveRequest receive(int slot) {
        return ReceiveRequest.into(inbox, 8L * slot, 8).wrId(100 + slot);
    }

    /** Sends {@code value} (8 bytes from slot {@code slot} of the outbox) from {@code qp} and waits until it is acknowledged. */
    void send(QueuePair qp, int slot, long value) {
        outbox.segment().set(ValueLayout.JAVA_LONG, 8L * slot, value);
        qp.post(WorkRequest.send(outbox, 8L * slot, 8).wrId(slot));
        WorkCompletion wc = Endpoint.next(clientCq);
        assertEquals(WcStatus.SUCCESS, wc.status(), wc::toString);
    }

    long received(long wrId) {
        return inbox.segment().get(ValueLayout.JAVA_LONG, 8L * (wrId - 100));
    }

    /** Polls {@code cq} until {@code future} is done (futures complete from the poll that sees them). */
    static void pollUntilDone(CompletionQueue cq, CompletableFuture<?> future) {
        WorkCompletion[] one = {new WorkCompletion()};
        long deadline = System.nanoTime() + WAIT.toNanos();
        try {
            while (!future.isDone() && System.nanoTime() < deadline) {
                assertEquals(0, cq.poll(one, Duration.ofMillis(20)), () -> "unexpected " + one[0]);
            }
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
        assertTrue(future.isDone(), "no completion for the future on " + cq + " within " + WAIT);
    }

    // ---- tests -----------------------------------------------------------------------------------------------

    @Test
    void everyQpTakesFromTheOneQueueAndItsCompletionNamesTheQp() {
        int n = 2 * PEERS;
        for (int i = 0; i < n; i++) srq.post(receive(i));
        assertEquals(n, srq.posted());
        for (int round = 0; round < 2; round++) {
            for (int p = 0; p < PEERS; p++) send(client[p], round * PEERS + p, 1000L * p + round);
        }
        Map<Integer, Integer> perQp = new HashMap<>();
        Set<Long> wrIds = new HashSet<>();
        for (int i = 0; i < n; i++) {
            WorkCompletion wc = Endpoint.next(serverCq);
            assertEquals(WcStatus.SUCCESS, wc.status(), wc::toString);
            assertEquals(WcOpcode.RECV, wc.opcode());
            assertEquals(8, wc.byteLength());
            assertTrue(wrIds.add(wc.wrId()), () -> "wrId completed twice: " + wc);
            int peer = indexOf(wc.qpNumber());
            assertEquals(peer, received(wc.wrId()) / 1000, () -> "the data of another QP's SEND in " + wc);
            perQp.merge(peer, 1, Integer::sum);
        }
        assertEquals(Map.of(0, 2, 1, 2, 2, 2), perQp);
        assertEquals(0, srq.posted());
    }

    private int indexOf(int qpNumber) {
        for (int i = 0; i < PEERS; i++) if (server[i].number() == qpNumber) return i;
        throw new AssertionError("qpn " + qpNumber + " is none of the QPs on the SRQ");
    }

    @Test
    void completionsRetireTheirOwnSlotOutOfOrder() {
        CompletionQueue otherCq = serverContext.createCompletionQueue(16);
        QueuePair viaOther = serverPd.createQueuePair(serverCq, otherCq, CAPS, srq);
        QueuePair peer = clientPd.createQueuePair(clientCq, clientCq, CAPS);
        connect(viaOther, peer);

        CompletableFuture<WorkCompletion> first = srq.postAsync(receive(0));
        srq.post(receive(1));
        send(peer, 0, 7);      // takes the first receive; its completion waits on otherCq
        send(client[0], 1, 8); // takes the second

        WorkCompletion second = Endpoint.next(serverCq);
        assertEquals(101, second.wrId());
        assertEquals(server[0].number(), second.qpNumber());
        assertEquals(1, srq.posted(), "retiring the second receive must leave the first outstanding");
        assertFalse(first.isDone());

        srq.post(receive(2)); // reuses the slot the second one freed
        pollUntilDone(otherCq, first);
        WorkCompletion wc = first.join();
        assertEquals(100, wc.wrId());
        assertEquals(viaOther.number(), wc.qpNumber());
        assertEquals(7, received(100));
        assertEquals(1, srq.posted());

        send(client[1], 2, 9);
        WorkCompletion third = Endpoint.next(serverCq);
        assertEquals(102, third.wrId());
        assertEquals(9, received(102));
        assertEquals(0, srq.posted());
    }

    @Test
    void postingPastMaxWrIsRefusedWithoutBlocking() {
        SharedReceiveQueue small = serverPd.createSharedReceiveQueue(SrqAttributes.builder().maxWr(4).build());
        assertEquals(4, small.maxWr());
        for (int i = 0; i < 4; i++) small.post(receive(i));
        var full = assertThrows(QueueFullException.class, () -> small.post(receive(4)));
        assertTrue(full.getMessage().contains("4"), full::getMessage);
        assertEquals(4, small.posted());
        var wide = ReceiveRequest.into(inbox, 0, 8).local(inbox, 8, 8);
        var tooWide = assertThrows(IllegalArgumentException.class, () -> srq.post(wide));
        assertTrue(tooWide.getMessage().contains("maxSge 1"), tooWide::getMessage);
    }

    @Test
    void theLimitEventFiresOnceFewerThanTheLimitArePostedThenDisarms() throws InterruptedException {
        var fired = new CountDownLatch(1);
        srq.onLimitReached(fired::countDown);
        for (int i = 0; i < 4; i++) srq.post(receive(i));
        srq.arm(3);
        assertEquals(3, srq.limit());

        send(client[0], 0, 1);
        Endpoint.next(serverCq);
        assertEquals(3, srq.limit(), "3 posted is not fewer than the limit: still armed");

        send(client[1], 1, 2);
        Endpoint.next(serverCq);
        assertTrue(fired.await(WAIT.toSeconds(), TimeUnit.SECONDS), "no limit event");
        assertEquals(0, srq.limit(), "the event disarms the queue");

        var over = assertThrows(IllegalArgumentException.class, () -> srq.arm(DEPTH + 1));
        assertTrue(over.getMessage().contains(String.valueOf(DEPTH)), over::getMessage);
        assertThrows(IllegalArgumentException.class, () -> srq.arm(-1));
        assertEquals(2, serverPd.createSharedReceiveQueue(SrqAttributes.builder().maxWr(8).limit(2).build()).limit(),
                "armed at creation");
    }

    @Test
    void aQpMovedToErrorFlushesNoneOfTheOthersReceives() {
        for (int i = 0; i < 3; i++) srq.post(receive(i));
        server[0].moveToError();
        assertEquals(3, srq.posted());
        send(client[1], 0, 5);
        WorkCompletion wc = Endpoint.next(serverCq); // a flush of the shared receives would come first
        assertEquals(WcStatus.SUCCESS, wc.status(), wc::toString);
        assertEquals(server[1].number(), wc.qpNumber());
        assertEquals(2, srq.posted());
    }

    @Test
    void aQpOnTheQueueHasNoReceiveQueueOfItsOwn() {
        assertSame(srq, server[0].sharedReceiveQueue().orElseThrow());
        var refused = assertThrows(IllegalStateException.class, () -> server[0].post(receive(0)));
        assertTrue(refused.getMessage().contains(srq.toString()), refused::getMessage);
        assertTrue(client[0].sharedReceiveQueue().isEmpty());
    }

    @Test
    void aReceiveTakenByADestroyedQpStillRetiresItsSlot() {
        srq.post(receive(0));
        srq.post(receive(1));
        send(client[0], 0, 3);
        server[0].close(); // its receive completion is still in the CQ
        assertEquals(ResourceState.DESTROYED, server[0].resource().state());
        WorkCompletion wc = Endpoint.next(serverCq);
        assertEquals(100, wc.wrId());
        assertEquals(1, srq.posted());
    }

    @Test
    void teardownFollowsTheGraphQpsFirst() {
        assertEquals(PEERS, srq.resource().children().size(), srq.resource().children()::toString);
        CompletableFuture<WorkCompletion> pending = srq.postAsync(receive(0));
        srq.close();
        assertEquals(ResourceState.CLOSING, srq.resource().state(), "destroyed only after the QPs on it");
        assertThrows(ResourceClosedException.class, () -> srq.post(receive(1)));
        for (QueuePair qp : server) qp.close();
        assertEquals(ResourceState.DESTROYED, srq.resource().state());
        var failed = assertThrows(CompletionException.class, pending::join);
        assertTrue(failed.getCause() instanceof ResourceClosedException, failed::toString);
        inbox.close(); // the discarded receive let go of it
        assertEquals(ResourceState.DESTROYED, inbox.resource().state());
    }

    @Test
    void aQueueOfAnotherDeviceContextIsRefused() {
        int live = graph.liveCount();
        var refused = assertThrows(IllegalArgumentException.class,
                () -> clientPd.createQueuePair(clientCq, clientCq, CAPS, srq));
        assertTrue(refused.getMessage().contains(srq.toString()), refused::getMessage);
        assertEquals(live, graph.liveCount(), "nothing half-created");
    }

    @Test
    void sizesTheDeviceCannotMakeAreRefused() {
        DeviceAttributes device = serverContext.device().attributes();
        var wr = assertThrows(IllegalArgumentException.class, () -> serverPd.createSharedReceiveQueue(
                SrqAttributes.builder().maxWr(device.maxSrqWr() + 1).build()));
        assertTrue(wr.getMessage().contains("max_srq_wr of " + device.maxSrqWr()), wr::getMessage);
        var sge = assertThrows(IllegalArgumentException.class, () -> serverPd.createSharedReceiveQueue(
                SrqAttributes.builder().maxSge(device.maxSrqSge() + 1).build()));
        assertTrue(sge.getMessage().contains("max_srq_sge of " + device.maxSrqSge()), sge::getMessage);
        var empty = assertThrows(IllegalArgumentException.class, () -> SrqAttributes.builder().maxWr(0).build());
        assertTrue(empty.getMessage().contains("maxWr >= 1"), empty::getMessage);
        var limit = assertThrows(IllegalArgumentException.class,
                () -> SrqAttributes.builder().maxWr(4).limit(5).build());
        assertTrue(limit.getMessage().contains("limit 5"), limit::getMessage);
    }
}
