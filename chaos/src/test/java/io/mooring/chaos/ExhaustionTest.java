package io.mooring.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.ConnectFailedException;
import io.mooring.lease.FlowControlException;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.LeaseRefusedException;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.WorkRequest;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A peer that exhausts what an endpoint has — sessions, message credits, the shared receive queue, locked memory —
 * gets a typed refusal or back-pressure, and the endpoint keeps serving an honest peer, whose lease and messages work
 * before, during and after. Every case ends with every block back in its arena and the resource graph empty.
 *
 * <p>A CQ overrun cannot be provoked through the endpoint: every QP of every session completes on its one CQ, which
 * it sizes for {@code maxSessions} sessions' queue depths (a request counts until its completion is polled, a shared
 * receive is posted again only after its completion was), and it cuts {@code maxSessions} to what the device's CQ can
 * hold — so the session refused past the limit ({@link #aPeerOpeningSessionsInALoopIsRefusedPastTheLimit}) is the
 * overrun refused, and {@link #theCompletionQueueHoldsEverySessionsFloodWhileNobodyPollsIt} tries the rest.
 */
@Timeout(120)
class ExhaustionTest {
    private static final int MAX_SESSIONS = 6;
    /** Every endpoint's message window here: the messages a side may have in flight before it needs credits back. */
    private static final int WINDOW = 16;
    private final ResourceGraph graph = ResourceGraph.builder().name("exhaustion").build();
    private final ProtectionDomain ownerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
    private final ProtectionDomain honestPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
    private final ProtectionDomain hostilePd = RdmaDevices.open("soft:soft1", graph).allocateProtectionDomain();
    private final RdmaArena ownerArena = ChaosRun.arena(ownerPd);
    private final RdmaArena honestArena = ChaosRun.arena(honestPd);
    private final RdmaArena hostileArena = ChaosRun.arena(hostilePd);
    private final Logger leaseLog = Logger.getLogger("io.mooring.lease");
    private Level level;
    private RdmaEndpoint owner;
    private RdmaListener listener;
    private RdmaEndpoint honestEndpoint;
    private RdmaEndpoint hostile;
    private RdmaSession honest;
    private RdmaSession honestOwnerSide;
    private int honestMessages;

    @BeforeEach
    void start() throws Exception {
        level = leaseLog.getLevel();
        leaseLog.setLevel(Level.OFF); // the refusals and lost sessions are the point; each is asserted
        owner = RdmaEndpoint.builder(ownerPd, ownerArena).maxSessions(MAX_SESSIONS).messageWindow(WINDOW)
                .failureBackoff(Duration.ZERO).build();
        listener = owner.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        honestEndpoint = RdmaEndpoint.builder(honestPd, honestArena).build();
        hostile = RdmaEndpoint.builder(hostilePd, hostileArena).messageWindow(WINDOW).build();
        var accepted = listener.acceptAsync();
        honest = honestEndpoint.connectAsync(listener.address()).get(30, TimeUnit.SECONDS);
        honestOwnerSide = accepted.get(30, TimeUnit.SECONDS);
        servesTheHonestPeer();
    }

    @AfterEach
    void stop() throws InterruptedException {
        try {
            honest.close();
            for (AutoCloseable c : new AutoCloseable[] {listener, owner, honestEndpoint, hostile}) close(c);
            ownerArena.flushThreadCaches();
            assertEquals(0, ownerArena.stats().liveBlocks(), "owner blocks left");
            hostileArena.flushThreadCaches();
            awaitTrue(() -> hostileArena.stats().liveBlocks() == 0, "the hostile blocks to come back ("
                    + hostileArena.stats().liveBlocks() + " live)");
        } finally {
            ownerArena.close();
            honestArena.close();
            hostileArena.close();
            graph.close();
            leaseLog.setLevel(level);
        }
        assertEquals(0, graph.liveCount(), graph::dump);
    }

    private static void close(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /** The honest peer's lease (write, read back) and a message each way. */
    private void servesTheHonestPeer() throws Exception {
        try (RemoteSegment lease = honest.requestRemote(512, Duration.ofSeconds(30), ChaosRun.RW);
             Block out = honestArena.allocateShared(512, 8); Block in = honestArena.allocateShared(512, 8)) {
            Payload.write(out.segment(), 512, ++honestMessages);
            lease.write(out, 0);
            lease.read(in, 0);
            assertEquals(-1, out.segment().mismatch(in.segment()), "the lease reads back what was written");
            honest.send(out);
            try (InboundMessage m = honestOwnerSide.receive(Duration.ofSeconds(30))) {
                assertEquals(honestMessages, Payload.check(m.data()));
            }
        }
        assertNull(honest.lostReason());
    }

    @Test
    void aPeerOpeningSessionsInALoopIsRefusedPastTheLimit() throws Exception {
        List<RdmaSession> opened = new ArrayList<>();
        int refused = 0;
        for (int i = 0; i < 3 * MAX_SESSIONS; i++) {
            var accepted = listener.acceptAsync();
            try {
                opened.add(hostile.connectAsync(listener.address()).get(30, TimeUnit.SECONDS));
                accepted.get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                assertInstanceOf(ConnectFailedException.class, e.getCause(), e.toString());
                refused++;
                accepted.cancel(false);
            }
        }
        assertEquals(MAX_SESSIONS - 1, opened.size(), "the honest peer holds one of " + MAX_SESSIONS);
        assertEquals(3 * MAX_SESSIONS - (MAX_SESSIONS - 1), refused);
        servesTheHonestPeer();
        opened.forEach(RdmaSession::close);
        awaitTrue(() -> owner.sessions().size() == 1, "the owner to drop the closed sessions");
        var accepted = listener.acceptAsync();
        hostile.connectAsync(listener.address()).get(30, TimeUnit.SECONDS).close();
        accepted.get(30, TimeUnit.SECONDS);
        servesTheHonestPeer();
    }

    @Test
    void aPeerFloodingMessagesMeetsBackPressureAndLosesNothing() throws Exception {
        var accepted = listener.acceptAsync();
        RdmaSession flooder = hostile.connectAsync(listener.address()).get(30, TimeUnit.SECONDS);
        RdmaSession flooded = accepted.get(30, TimeUnit.SECONDS);
        List<Block> blocks = new ArrayList<>();
        List<CompletableFuture<?>> sent = flood(flooder, hostileArena, blocks);
        servesTheHonestPeer();
        for (int seq = 1; seq <= sent.size(); seq++) { // taking them returns credits: the queued ones follow
            try (InboundMessage m = flooded.receive(Duration.ofSeconds(30))) {
                assertEquals(seq, Payload.check(m.data()), "the flood arrives in order, once");
            }
        }
        for (var s : sent) s.get(30, TimeUnit.SECONDS);
        blocks.forEach(Block::close);
        assertNull(flooder.lostReason());
        flooder.close();
        servesTheHonestPeer();
    }

    /**
     * Every session the endpoint allows floods both ways at once — each peer queues sends until pushed back, the
     * owner likewise to each peer — while the owner polls nothing: a callback on an owner READ's future, which runs
     * on the endpoint's completion thread, holds it. Once a window of messages has landed each way on every session,
     * their completions wait in the CQ together; had the CQ been smaller than the queues feeding it, it would have
     * overrun and every session on it would be lost. They all go on: every message is delivered once, in order, and
     * the honest peer is served.
     */
    @Test
    void theCompletionQueueHoldsEverySessionsFloodWhileNobodyPollsIt() throws Exception {
        List<RdmaSession[]> floods = new ArrayList<>(); // a peer's session and the owner's side of it
        for (int i = 0; i < MAX_SESSIONS - 1; i++) {
            var accepted = listener.acceptAsync();
            RdmaSession peer = hostile.connectAsync(listener.address()).get(30, TimeUnit.SECONDS);
            floods.add(new RdmaSession[] {peer, accepted.get(30, TimeUnit.SECONDS)});
        }
        var stalled = new java.util.concurrent.CountDownLatch(1);
        var resume = new java.util.concurrent.CountDownLatch(1);
        // The owner READs a block the honest peer offers; the READ's completion, and so a callback on its future, runs
        // on the thread that polls the endpoint's CQ.
        Block offered = honestArena.allocateShared(64, 8);
        honest.offer(offered, Duration.ofSeconds(30), ChaosRun.RW);
        RemoteSegment offer = honestOwnerSide.receiveOffer(Duration.ofSeconds(30));
        Block readInto = ownerArena.allocateShared(64, 8);
        honestOwnerSide.queuePair().postAsync(WorkRequest.read(readInto.region(), readInto.regionOffset(), 64)
                .remote(offer.address(), offer.rkey())).thenRun(() -> {
                    stalled.countDown();
                    try {
                        resume.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
        assertTrue(stalled.await(30, TimeUnit.SECONDS), "the READ never completed");
        List<List<CompletableFuture<?>>> toOwner = new ArrayList<>();
        List<List<CompletableFuture<?>>> toPeer = new ArrayList<>();
        List<Block> blocks = new ArrayList<>();
        try {
            for (RdmaSession[] f : floods) {
                toOwner.add(flood(f[0], hostileArena, blocks));
                toPeer.add(flood(f[1], ownerArena, blocks));
            }
            for (int f = 0; f < floods.size(); f++) {
                for (int seq = 1; seq <= WINDOW; seq++) {
                    toOwner.get(f).get(seq - 1).get(30, TimeUnit.SECONDS); // acknowledged: it took an owner receive
                    try (InboundMessage m = floods.get(f)[0].receive(Duration.ofSeconds(30))) { // the owner's SEND
                        assertEquals(seq, Payload.check(m.data()));
                    }
                }
            }
        } finally {
            resume.countDown();
        }
        for (int f = 0; f < floods.size(); f++) {
            for (int seq = 1; seq <= toOwner.get(f).size(); seq++) {
                try (InboundMessage m = floods.get(f)[1].receive(Duration.ofSeconds(30))) {
                    assertEquals(seq, Payload.check(m.data()), "the flood arrives at the owner in order, once");
                }
            }
            for (int seq = WINDOW + 1; seq <= toPeer.get(f).size(); seq++) {
                try (InboundMessage m = floods.get(f)[0].receive(Duration.ofSeconds(30))) {
                    assertEquals(seq, Payload.check(m.data()), "the flood arrives at the peer in order, once");
                }
            }
            for (var s : toOwner.get(f)) s.get(30, TimeUnit.SECONDS);
            for (var s : toPeer.get(f)) s.get(30, TimeUnit.SECONDS);
        }
        blocks.forEach(Block::close);
        for (RdmaSession[] f : floods) {
            assertNull(f[0].lostReason());
            assertNull(f[1].lostReason());
        }
        servesTheHonestPeer();
        floods.forEach(f -> f[0].close());
        offer.close();
        offered.close();
        readInto.close();
    }

    /**
     * Queues numbered messages from {@code from} to a peer that takes none until it pushes back (at most 5000);
     * returns their futures, their blocks added to {@code blocks}.
     */
    private static List<CompletableFuture<?>> flood(RdmaSession from, RdmaArena arena, List<Block> blocks) {
        List<CompletableFuture<?>> sent = new ArrayList<>();
        for (int seq = 1; seq <= 5000; seq++) {
            Block b = arena.allocateShared(64, 8);
            Payload.write(b.segment(), 64, seq);
            try {
                sent.add(from.sendAsync(b, 64));
                blocks.add(b);
            } catch (FlowControlException e) {
                b.close();
                return sent;
            }
        }
        throw new AssertionError("5000 sends to a peer that takes none were all queued");
    }

    /**
     * A peer that ignores its credits and SENDs straight on its data QP would drain the shared receive queue every
     * session draws from: it loses its session instead, and the honest peer's messages still find receives.
     */
    @Test
    void aPeerDrainingTheSharedReceiveQueueLosesItsSession() throws Exception {
        var accepted = listener.acceptAsync();
        RdmaSession drainer = hostile.connectAsync(listener.address()).get(30, TimeUnit.SECONDS);
        RdmaSession drained = accepted.get(30, TimeUnit.SECONDS);
        try (Block b = hostileArena.allocateShared(64, 8)) {
            List<CompletableFuture<?>> posts = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                posts.add(drainer.queuePair().postAsync(WorkRequest.send(b.region(), b.regionOffset(), 64))
                        .exceptionally(e -> null));
            }
            String why = drained.closed().get(30, TimeUnit.SECONDS).reason();
            assertTrue(why.contains("past its") && why.contains("credits"), why);
            for (var p : posts) p.get(30, TimeUnit.SECONDS);
        }
        servesTheHonestPeer();
        drainer.close();
    }

    /**
     * Locked memory runs out mid-run ({@code mooring.soft.memlock}, read at each registration, plays
     * {@code ulimit -l}): a lease that needs a new chunk is refused with the limit named, and the endpoint goes on
     * serving from what it has registered.
     */
    @Test
    void lockedMemoryRunningOutRefusesTheLeaseThatNeedsMoreAndServesTheRest() throws Exception {
        var accepted = listener.acceptAsync();
        RdmaSession peer = hostile.connectAsync(listener.address()).get(30, TimeUnit.SECONDS);
        accepted.get(30, TimeUnit.SECONDS);
        String before = System.getProperty("mooring.soft.memlock");
        System.setProperty("mooring.soft.memlock", "0");
        try {
            var refused = assertThrows(LeaseRefusedException.class,
                    () -> peer.requestRemote(4 << 20, Duration.ofSeconds(30), ChaosRun.RW));
            assertTrue(refused.getMessage().contains("ENOMEM"), refused.getMessage());
            servesTheHonestPeer();
            assertNull(peer.lostReason(), "a refused lease ends no session");
        } finally {
            if (before == null) System.clearProperty("mooring.soft.memlock");
            else System.setProperty("mooring.soft.memlock", before);
        }
        peer.requestRemote(4 << 20, Duration.ofSeconds(30), ChaosRun.RW).close();
        peer.close();
    }

    private static void awaitTrue(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("waited 30 s for " + what);
            Thread.sleep(1);
        }
    }
}
