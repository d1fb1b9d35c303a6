package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.lifecycle.ResourceState;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.SrqAttributes;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Slots handed between posters and the CQ's poller without a shared lock: under posts from many threads (platform
 * and virtual), a reset or a poller of another CQ racing the poll, every request retires exactly once — no
 * completion lost or reported twice, no slot lost (the queue takes its full depth again), no region pin left or
 * released twice (closing the region destroys it at once).
 */
@Timeout(120)
class ConcurrentRetirementTest {
    private static final int DEPTH = 8;
    private static final QpCapabilities CAPS = QpCapabilities.builder().maxSendWr(DEPTH).maxRecvWr(DEPTH).maxSendSge(1)
            .maxRecvSge(1).maxInlineData(0).build();
    private static final long WAIT_SECONDS = Endpoint.WAIT.toSeconds();

    private ResourceGraph graph;
    private Arena arena;
    private Endpoint a;
    private Endpoint b;
    private final AtomicReference<Throwable> pollerFailure = new AtomicReference<>();
    private final List<Thread> pollers = new ArrayList<>();
    private final AtomicBoolean stop = new AtomicBoolean();

    @BeforeEach
    void connect() {
        graph = ResourceGraph.builder().name(getClass().getSimpleName()).build();
        arena = Arena.ofShared();
        a = new Endpoint(RdmaDevices.open("soft:soft0", graph), arena, CAPS);
        b = new Endpoint(RdmaDevices.open("soft:soft0", graph), arena, CAPS);
        Endpoint.connect(a, b, VerbsConformance.FAST);
    }

    @AfterEach
    void teardown() throws InterruptedException {
        stop.set(true);
        for (Thread t : pollers) t.join();
        assertNull(pollerFailure.get(), "a poller failed");
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
        arena.close();
    }

    /** Polls {@code cq} on a thread of its own until the test ends, handing each completion to {@code each}. */
    private void poll(CompletionQueue cq, java.util.function.Consumer<WorkCompletion> each) {
        pollers.add(Thread.ofPlatform().name("poller " + cq).start(() -> {
            WorkCompletion[] batch = {new WorkCompletion(), new WorkCompletion(), new WorkCompletion()};
            try {
                while (!stop.get()) {
                    int n = cq.poll(batch);
                    for (int i = 0; i < n; i++) each.accept(batch[i]);
                    if (n == 0) Thread.yield(); // several pollers and the soft NIC's threads share few cores
                }
            } catch (Throwable e) {
                pollerFailure.set(e);
            }
        }));
    }

    private static void await(CountDownLatch done, AtomicIntegerArray seen) throws InterruptedException {
        assertTrue(done.await(WAIT_SECONDS, TimeUnit.SECONDS), () -> done.getCount() + " completions missing: " + seen);
    }

    /** Posts, retrying while the queue is full: the poller frees a slot with each completion it takes. */
    private static <T> T retryWhileFull(java.util.function.Supplier<T> post) {
        while (true) {
            try {
                return post.get();
            } catch (QueueFullException e) {
                Thread.yield(); // a virtual poster lets the others (and the soft requester) run
            }
        }
    }

    @ParameterizedTest(name = "virtual posters: {0}")
    @ValueSource(booleans = {false, true})
    void postersRacingThePollerRetireEveryRequestOnce(boolean virtual) throws Exception {
        int posters = 4;
        int each = 1_000;
        MemoryRegion source = a.open(8, 1);
        MemoryRegion target = b.open(8L * posters, 0);
        var seen = new AtomicIntegerArray(posters * each);
        var done = new CountDownLatch(posters * each);
        poll(a.cq, wc -> {
            if (!wc.isSuccess()) throw new AssertionError(wc.toString());
            seen.incrementAndGet((int) wc.wrId());
            done.countDown();
        });
        Thread.Builder builder = virtual ? Thread.ofVirtual() : Thread.ofPlatform();
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < posters; p++) {
            int first = p * each;
            var write = WorkRequest.write(source, 0, 8).remote(target.address() + 8L * p, target.rkey());
            threads.add(builder.start(() -> {
                for (int i = first; i < first + each; i++) {
                    write.wrId(i);
                    if (i % 2 == 0) {
                        retryWhileFull(() -> {
                            a.qp.post(write);
                            return null;
                        });
                    } else { // half through futures, which the same poll completes
                        retryWhileFull(() -> a.qp.postAsync(write)).thenAccept(wc -> {
                            seen.incrementAndGet((int) wc.wrId());
                            done.countDown();
                        });
                    }
                }
            }));
        }
        for (Thread t : threads) t.join();
        await(done, seen);
        for (int i = 0; i < seen.length(); i++) assertEquals(1, seen.get(i), "completions of wrId " + i);
        assertEquals(0, a.qp.outstandingSends());
        stop.set(true); // nobody polls now: the next posts stay outstanding
        for (Thread t : pollers) t.join();
        assertNull(pollerFailure.get(), "the poller failed");
        for (int i = 0; i < DEPTH; i++) a.qp.post(WorkRequest.write(source, 0, 8).remote(target.address(), target.rkey()));
        assertEquals(DEPTH, a.qp.outstandingSends(), "the full depth again: no slot was lost");
        a.qp.close();
        source.close();
        assertEquals(ResourceState.DESTROYED, source.resource().state(), "a pin left behind or released twice");
    }

    @Test
    void aResetRacingThePollerRetiresEachRequestOnce() throws Exception {
        MemoryRegion source = a.open(8, 1);
        MemoryRegion target = b.open(8, 0);
        var write = WorkRequest.write(source, 0, 8).remote(target.address(), target.rkey());
        poll(a.cq, wc -> {
            throw new AssertionError("every request went through a future, yet the poll returned " + wc);
        });
        int succeeded = 0;
        for (int round = 0; round < 200; round++) {
            List<CompletableFuture<WorkCompletion>> futures = new ArrayList<>();
            for (int i = 0; i < DEPTH; i++) futures.add(a.qp.postAsync(write.wrId(i)));
            a.qp.reset(); // discards what the poller has not taken yet; its leftover completions retire nothing
            for (var f : futures) {
                var outcome = f.handle((wc, e) -> wc != null).get(WAIT_SECONDS, TimeUnit.SECONDS);
                if (outcome) succeeded++;
            }
            assertEquals(0, a.qp.outstandingSends(), "round " + round);
            b.qp.reset();
            Endpoint.connect(a, b, VerbsConformance.FAST);
        }
        assertTrue(succeeded < 200 * DEPTH, "some requests were discarded by the resets: " + succeeded);
        for (int i = 0; i < DEPTH; i++) a.qp.postAsync(write.wrId(i)).get(WAIT_SECONDS, TimeUnit.SECONDS);
        a.qp.close();
        source.close();
        assertEquals(ResourceState.DESTROYED, source.resource().state(), "a pin left behind or released twice");
    }

    @Test
    void pollersOfSeveralCqsRetireASharedQueuesReceivesOnce() throws Exception {
        int peers = 3;
        int each = 500;
        int maxWr = 16;
        var options = VerbsConformance.FAST.toBuilder().rnrRetry(7).build(); // a momentarily empty queue: RNR, retried
        SharedReceiveQueue srq = b.pd.createSharedReceiveQueue(SrqAttributes.builder().maxWr(maxWr).build());
        MemoryRegion inbox = b.pd.register(arena.allocate(8L * maxWr, 64), Set.of(Access.LOCAL_WRITE));
        MemoryRegion outbox = a.open(8, 1);
        var seen = new AtomicIntegerArray(maxWr + peers * each);
        var done = new CountDownLatch(peers * each);
        var nextWrId = new AtomicLong(maxWr);
        // Each receive completion reposts one from its poller's thread: posters and pollers of three CQs at once.
        java.util.function.Consumer<WorkCompletion> onReceive = wc -> {
            if (!wc.isSuccess()) throw new AssertionError(wc.toString());
            seen.incrementAndGet((int) wc.wrId());
            long id = nextWrId.getAndIncrement();
            srq.post(ReceiveRequest.into(inbox, 8L * (id % maxWr), 8).wrId(id));
            done.countDown();
        };
        for (int i = 0; i < maxWr; i++) srq.post(ReceiveRequest.into(inbox, 8L * i, 8).wrId(i));
        poll(a.cq, wc -> {
            throw new AssertionError("every send went through a future, yet the poll returned " + wc);
        });
        List<QueuePair> senders = new ArrayList<>();
        List<QueuePair> receivers = new ArrayList<>();
        for (int p = 0; p < peers; p++) {
            CompletionQueue cq = b.context.createCompletionQueue(64);
            QueuePair server = b.pd.createQueuePair(cq, cq, CAPS, srq);
            QueuePair client = a.pd.createQueuePair(a.cq, a.cq, CAPS);
            QpInfo s = server.info(options);
            QpInfo c = client.info(options);
            server.connect(c, options);
            client.connect(s, options);
            senders.add(client);
            receivers.add(server);
            poll(cq, onReceive);
        }
        List<Thread> threads = new ArrayList<>();
        for (QueuePair client : senders) {
            var send = WorkRequest.send(outbox, 0, 8);
            threads.add(Thread.ofVirtual().start(() -> {
                for (int i = 0; i < each; i++) retryWhileFull(() -> client.postAsync(send)).join();
            }));
        }
        for (Thread t : threads) t.join();
        await(done, seen);
        int received = 0;
        for (int i = 0; i < seen.length(); i++) {
            assertTrue(seen.get(i) <= 1, "receive " + i + " completed " + seen.get(i) + " times");
            received += seen.get(i);
        }
        assertEquals(peers * each, received);
        stop.set(true);
        for (Thread t : pollers) t.join();
        assertNull(pollerFailure.get(), "a poller failed");
        assertEquals(maxWr, srq.posted(), "every receive taken was reposted and no slot was lost");
        for (QueuePair qp : receivers) qp.close();
        srq.close();
        inbox.close();
        assertEquals(ResourceState.DESTROYED, inbox.resource().state(), "a pin left behind or released twice");
    }
}
