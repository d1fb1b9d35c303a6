package io.mooring.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.Lease;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import io.mooring.lease.SessionLostException;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.ChildJvm;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletionException;
import io.mooring.verbs.WorkRequest;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The peer or the owner in a second JVM, killed with SIGKILL (soft provider, TCP fabric between the processes): a
 * peer killed mid-lease and mid-message loses every lease within {@link ChaosRun#LATE_BOUND} while the owner keeps
 * serving another peer and leaks nothing; an owner killed and started again is out of reach of the old keys its peer
 * still holds. {@code -Dmooring.chaos.kills=N} kills more peers (default 4) for the revocation figures.
 *
 * <p>The kill test runs on other devices when {@code -Dmooring.chaos.owner} (the owner's, default {@code soft:soft0})
 * and {@code -Dmooring.chaos.peer} (the killed peer's and the served one's; default soft0 and soft1) name them —
 * in the rxe VM: {@code scripts/rxe-test.sh -Dmooring.chaos.owner=ibv:rxe0 -Dmooring.chaos.peer=ibv:rxe0
 * TwoProcessTest#aKilledPeerProcessLosesItsLeasesInBoundWhileTheOwnerServesAnother}; it is skipped, with the reason,
 * where such a device is absent.
 */
@Timeout(600)
class TwoProcessTest {
    private static final int KILLS = Integer.getInteger("mooring.chaos.kills", 4);
    private static final int LEASES = 4;
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String OWNER = System.getProperty("mooring.chaos.owner", "soft:soft0");
    private static final String PEER = System.getProperty("mooring.chaos.peer", "soft:soft0");
    private static final String OTHER = System.getProperty("mooring.chaos.peer", "soft:soft1");
    private final List<Process> children = new ArrayList<>();
    private final Logger leaseLog = Logger.getLogger("io.mooring.lease");
    private Level level;

    @BeforeEach
    void quiet() {
        level = leaseLog.getLevel();
        leaseLog.setLevel(Level.OFF); // the lost sessions are the point; every outcome is asserted
    }

    @AfterEach
    void cleanup() throws InterruptedException {
        for (Process p : children) {
            p.destroyForcibly();
            p.waitFor();
        }
        leaseLog.setLevel(level);
    }

    @Test
    void aKilledPeerProcessLosesItsLeasesInBoundWhileTheOwnerServesAnother() throws Exception {
        assumeDevice(OWNER);
        assumeDevice(PEER);
        var graph = ResourceGraph.builder().name("two-process-owner").build();
        ProtectionDomain pd = RdmaDevices.open(OWNER, graph).allocateProtectionDomain();
        RdmaArena arena = ChaosRun.arena(pd);
        ProtectionDomain otherPd = RdmaDevices.open(OTHER, graph).allocateProtectionDomain();
        RdmaArena otherArena = ChaosRun.arena(otherPd);
        var revocationMillis = new ArrayList<Long>();
        long messages = 0;
        try (RdmaEndpoint owner = RdmaEndpoint.builder(pd, arena).failureBackoff(Duration.ZERO).build();
             RdmaListener listener = owner.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
             RdmaEndpoint otherEndpoint = RdmaEndpoint.builder(otherPd, otherArena).build()) {
            var otherAccepted = listener.acceptAsync();
            RdmaSession other = otherEndpoint.connectAsync(listener.address()).get(30, TimeUnit.SECONDS);
            RdmaSession otherOwnerSide = otherAccepted.get(30, TimeUnit.SECONDS);
            for (int k = 0; k < KILLS; k++) {
                var accepted = listener.acceptAsync();
                Process child = start(PeerProcess.class, "127.0.0.1", Integer.toString(listener.address().getPort()),
                        Integer.toString(LEASES), PEER);
                RdmaSession ownerSide = accepted.get(60, TimeUnit.SECONDS);
                String ready = readLine(child, "READY");
                List<Lease> leases = Arrays.stream(ready.substring("READY ".length()).split(","))
                        .map(id -> ownerSide.leases().lease(Long.parseLong(id))).toList();
                leases.forEach(l -> assertNotNull(l, "a lease of " + ready + " is not active at the owner"));
                List<CompletableFuture<Long>> endedAt = leases.stream()
                        .map(l -> l.ended().thenApply(r -> System.nanoTime())).toList();
                var received = new AtomicLong();
                CompletableFuture<Void> receiving = CompletableFuture.runAsync(() -> {
                    try {
                        for (long expected = 1; ; expected++) {
                            try (InboundMessage m = ownerSide.receive()) {
                                assertEquals(expected, Payload.check(m.data()), "messages arrive once, in order");
                                received.incrementAndGet();
                            }
                        }
                    } catch (SessionLostException e) {
                        // the peer was killed
                    }
                }, r -> Thread.ofVirtual().start(r));
                int enough = 5 + k * 7;
                awaitTrue(() -> received.get() >= enough, "the peer's messages");
                long killed = System.nanoTime();
                child.destroyForcibly(); // SIGKILL
                ownerSide.closed().get(WAIT.toSeconds(), TimeUnit.SECONDS);
                long last = 0;
                for (var e : endedAt) last = Math.max(last, e.get(WAIT.toSeconds(), TimeUnit.SECONDS));
                revocationMillis.add((last - killed) / 1_000_000);
                receiving.get(WAIT.toSeconds(), TimeUnit.SECONDS);
                messages += received.get();
                assertTrue(child.waitFor(30, TimeUnit.SECONDS));
                assertEquals(137, child.exitValue(), "killed by SIGKILL");
                servesStill(other, otherOwnerSide, otherArena, k);
            }
            other.close();
        } finally {
            otherArena.close();
            arena.close();
            graph.close();
        }
        assertEquals(0, graph.liveCount(), graph::dump);
        revocationMillis.sort(null);
        long max = revocationMillis.getLast();
        long p99 = revocationMillis.get((int) Math.ceil(0.99 * revocationMillis.size()) - 1);
        System.out.println("peer processes on " + PEER + " killed " + KILLS + " (owner on " + OWNER + ", " + LEASES
                + " leases each, " + messages + " messages received before): time from SIGKILL to the last revocation"
                + " max " + max + " ms, p99 " + p99 + " ms, all " + revocationMillis);
        assertTrue(max <= ChaosRun.LATE_BOUND.toMillis(), "revoked " + max + " ms after the kill");
    }

    /** The other peer's lease and messages work as before. */
    private static void servesStill(RdmaSession other, RdmaSession otherOwnerSide, RdmaArena arena, int k) throws Exception {
        try (RemoteSegment lease = other.requestRemote(256, Duration.ofSeconds(30), ChaosRun.RW);
             Block out = arena.allocateShared(256, 8); Block in = arena.allocateShared(256, 8)) {
            out.segment().fill((byte) k);
            lease.write(out, 0);
            lease.read(in, 0);
            assertEquals(-1, out.segment().mismatch(in.segment()));
            Payload.write(out.segment(), 256, k + 1);
            other.send(out);
            try (InboundMessage m = otherOwnerSide.receive(WAIT)) {
                assertEquals(k + 1, Payload.check(m.data()));
            }
        }
    }

    @Test
    void anOwnerStartedAgainIsOutOfReachOfTheOldKeys() throws Exception {
        var graph = ResourceGraph.builder().name("two-process-peer").build();
        ProtectionDomain pd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        RdmaArena arena = ChaosRun.arena(pd);
        int tried = 0;
        try (RdmaEndpoint peer = RdmaEndpoint.builder(pd, arena).build();
             Block local = arena.allocateShared(4096, 8)) {
            Process first = start(OwnerProcess.class, "16");
            var firstOwner = new InetSocketAddress(InetAddress.getLoopbackAddress(), port(first));
            RdmaSession session = peer.connectAsync(firstOwner).get(30, TimeUnit.SECONDS);
            record Key(long address, int rkey) {}
            List<Key> keys = new ArrayList<>();
            local.segment().fill((byte) 0x11);
            for (int i = 0; i < 8; i++) {
                RemoteSegment lease = session.requestRemote(4096, Duration.ofMinutes(5), ChaosRun.RW);
                lease.write(local, 0);
                keys.add(new Key(lease.address(), lease.rkey()));
            }
            first.destroyForcibly();
            assertNotEquals(null, session.closed().get(WAIT.toSeconds(), TimeUnit.SECONDS));

            Process second = start(OwnerProcess.class, "16");
            var secondOwner = new InetSocketAddress(InetAddress.getLoopbackAddress(), port(second));
            session = peer.connectAsync(secondOwner).get(30, TimeUnit.SECONDS);
            for (Key key : keys) {
                for (boolean read : new boolean[] {false, true}) {
                    WorkRequest wr = read ? WorkRequest.read(local.region(), local.regionOffset(), 4096)
                            : WorkRequest.write(local.region(), local.regionOffset(), 4096);
                    WcStatus status;
                    try {
                        status = session.queuePair().postAsync(wr.remote(key.address(), key.rkey()))
                                .get(WAIT.toSeconds(), TimeUnit.SECONDS).status();
                    } catch (java.util.concurrent.ExecutionException e) {
                        status = ((WorkCompletionException) e.getCause()).status();
                    }
                    tried++;
                    assertNotEquals(WcStatus.SUCCESS, status, "an old key reached the new owner process");
                    session.close();
                    session = peer.connectAsync(secondOwner).get(30, TimeUnit.SECONDS); // the failure ended the session
                }
            }
            session.close();
            PrintStream toSecond = new PrintStream(second.getOutputStream(), true);
            toSecond.println("CHECK");
            assertEquals("INTACT", readLine(second, ""), "the new owner's memory after " + tried + " old-key accesses");
            second.destroyForcibly();
        } finally {
            arena.close();
            graph.close();
        }
        assertEquals(0, graph.liveCount(), graph::dump);
        System.out.println("owner restarted: " + tried + " accesses through old keys, none reached the new process");
    }

    /** Skips the test, saying why, unless {@code name} ({@code provider:device}) is a device here. */
    private static void assumeDevice(String name) {
        int colon = name.indexOf(':');
        String why;
        try {
            boolean present = colon > 0 && RdmaDevices.devices(name.substring(0, colon)).stream()
                    .anyMatch(d -> d.name().equals(name.substring(colon + 1)));
            why = present ? null : "no device " + name + " here (rxe0: run scripts/rxe-test.sh for the Soft-RoCE VM)";
        } catch (VerbsException | IllegalArgumentException e) {
            why = "no device " + name + ": " + e.getMessage();
        }
        Assumptions.assumeTrue(why == null, why);
    }

    private Process start(Class<?> main, String... args) throws IOException {
        Process p = new ProcessBuilder(ChildJvm.command(List.of("--enable-native-access=ALL-UNNAMED",
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Dmooring.soft.devices=1"), main, args))
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        children.add(p);
        return p;
    }

    private static int port(Process owner) throws IOException {
        return Integer.parseInt(readLine(owner, "PORT ").substring("PORT ".length()));
    }

    /** The child's next line starting with {@code prefix}; its output is one line per event, so this ends. */
    private static String readLine(Process child, String prefix) throws IOException {
        var out = new BufferedReader(new InputStreamReader(child.getInputStream()));
        for (String line; (line = out.readLine()) != null; ) if (line.startsWith(prefix)) return line;
        throw new AssertionError("the child ended (exit " + child.onExit().join().exitValue() + ") before printing "
                + prefix);
    }

    private static void awaitTrue(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("waited " + WAIT + " for " + what);
            Thread.sleep(1);
        }
    }
}
