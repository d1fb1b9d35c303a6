package io.mooring.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
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
import java.io.IOException;
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
 * <p>A CQ overrun cannot be provoked through the endpoint: it sizes its CQ for {@code maxSessions} sessions' queues
 * and cuts {@code maxSessions} to what the device's CQ can hold, so the session refused past the limit
 * ({@link #aPeerOpeningSessionsInALoopIsRefusedPastTheLimit}) is the overrun refused.
 */
@Timeout(120)
class ExhaustionTest {
    private static final int MAX_SESSIONS = 6;
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
        owner = RdmaEndpoint.builder(ownerPd, ownerArena).maxSessions(MAX_SESSIONS).failureBackoff(Duration.ZERO)
                .build();
        listener = owner.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        honestEndpoint = RdmaEndpoint.builder(honestPd, honestArena).build();
        hostile = RdmaEndpoint.builder(hostilePd, hostileArena).build();
        var accepted = listener.accept();
        honest = honestEndpoint.connect(listener.address()).get(30, TimeUnit.SECONDS);
        honestOwnerSide = accepted.get(30, TimeUnit.SECONDS);
        servesTheHonestPeer();
    }

    @AfterEach
    void stop() {
        try {
            honest.close();
            for (AutoCloseable c : new AutoCloseable[] {listener, owner, honestEndpoint, hostile}) close(c);
            ownerArena.flushThreadCaches();
            assertEquals(0, ownerArena.stats().liveBlocks(), "owner blocks left");
            assertEquals(0, hostileArena.stats().liveBlocks(), "hostile blocks left");
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
            var accepted = listener.accept();
            try {
                opened.add(hostile.connect(listener.address()).get(30, TimeUnit.SECONDS));
                accepted.get(30, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                assertInstanceOf(IOException.class, e.getCause(), e.toString());
                refused++;
                accepted.cancel(false);
            }
        }
        assertEquals(MAX_SESSIONS - 1, opened.size(), "the honest peer holds one of " + MAX_SESSIONS);
        assertEquals(3 * MAX_SESSIONS - (MAX_SESSIONS - 1), refused);
        servesTheHonestPeer();
        opened.forEach(RdmaSession::close);
        awaitTrue(() -> owner.sessions().size() == 1, "the owner to drop the closed sessions");
        var accepted = listener.accept();
        hostile.connect(listener.address()).get(30, TimeUnit.SECONDS).close();
        accepted.get(30, TimeUnit.SECONDS);
        servesTheHonestPeer();
    }

    @Test
    void aPeerFloodingMessagesMeetsBackPressureAndLosesNothing() throws Exception {
        var accepted = listener.accept();
        RdmaSession flooder = hostile.connect(listener.address()).get(30, TimeUnit.SECONDS);
        RdmaSession flooded = accepted.get(30, TimeUnit.SECONDS);
        List<CompletableFuture<?>> sent = new ArrayList<>();
        List<Block> blocks = new ArrayList<>();
        FlowControlException pushedBack = null;
        for (int seq = 1; pushedBack == null && seq <= 5000; seq++) {
            Block b = hostileArena.allocateShared(64, 8);
            Payload.write(b.segment(), 64, seq);
            try {
                sent.add(flooder.sendAsync(b, 64));
                blocks.add(b);
            } catch (FlowControlException e) {
                pushedBack = e;
                b.close();
            }
        }
        assertTrue(pushedBack != null, "5000 sends to a peer that takes none were all queued");
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
     * A peer that ignores its credits and SENDs straight on its data QP would drain the shared receive queue every
     * session draws from: it loses its session instead, and the honest peer's messages still find receives.
     */
    @Test
    void aPeerDrainingTheSharedReceiveQueueLosesItsSession() throws Exception {
        var accepted = listener.accept();
        RdmaSession drainer = hostile.connect(listener.address()).get(30, TimeUnit.SECONDS);
        RdmaSession drained = accepted.get(30, TimeUnit.SECONDS);
        try (Block b = hostileArena.allocateShared(64, 8)) {
            List<CompletableFuture<?>> posts = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                posts.add(drainer.queuePair().postAsync(WorkRequest.send(b.region(), b.regionOffset(), 64))
                        .exceptionally(e -> null));
            }
            String why = drained.closed().get(30, TimeUnit.SECONDS);
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
        var accepted = listener.accept();
        RdmaSession peer = hostile.connect(listener.address()).get(30, TimeUnit.SECONDS);
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
