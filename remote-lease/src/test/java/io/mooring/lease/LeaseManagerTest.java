package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkCompletionException;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The owner's side on the soft provider: a peer QP writes through lease keys; everything is checked in memory. */
class LeaseManagerTest extends LeasePeers {
    @Override
    String device() {
        return "soft:soft0";
    }

    /** A pooled window is replaced before its 8-bit key would wrap: no peer ever sees a key an earlier lease had. */
    @Test
    void noRkeyComesBackAcrossManyLeasesOfPooledWindows() {
        try (LeaseManager leases = LeaseManager.create(ownerQp, LeaseLimits.DEFAULT, Isolation.WINDOW)) {
            Set<Integer> keys = new HashSet<>();
            for (int i = 0; i < 2 * WindowPool.MAX_BINDS + 10; i++) {
                Lease lease = leases.grant(arena.allocate(64), Duration.ofMinutes(1), WRITE);
                assertTrue(keys.add(lease.rkey()), "lease " + i + " got rkey 0x" + Integer.toHexString(lease.rkey())
                        + " again");
                lease.close();
            }
        }
    }

    /** A lease is in the lifecycle graph as a child of its block's chunk region, pinned by the owner's requests. */
    @Test
    void aLeaseIsAChildOfItsBlocksRegionUntilItEnds() {
        try (LeaseManager leases = LeaseManager.create(ownerQp, LeaseLimits.DEFAULT, Isolation.WINDOW)) {
            Block block = arena.allocate(64);
            Lease lease = leases.grant(block, Duration.ofMinutes(1), WRITE);
            var children = block.region().resource().children().stream().filter(c -> c.kind().equals("lease")).toList();
            assertEquals(1, children.size(), children::toString);
            assertTrue(children.getFirst().description().startsWith("lease " + lease.id() + " "), children::toString);
            lease.close();
            assertTrue(block.region().resource().children().stream().noneMatch(c -> c.kind().equals("lease")));
            block.close();
        }
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"WINDOW", "DEDICATED_REGISTRATION"})
    void aLeaseExposesExactlyItsBlockUntilItEnds(Isolation isolation) {
        try (LeaseManager leases = LeaseManager.create(ownerQp, LeaseLimits.DEFAULT, isolation)) {
            Block one = arena.allocate(64);
            Block two = arena.allocate(64);
            Block leased = one.address() < two.address() ? one : two;
            Block neighbour = leased == one ? two : one;
            neighbour.segment().fill((byte) 0);
            assertEquals(leased.address() + 64, neighbour.address(), "slab neighbours");
            Lease lease = leases.grant(leased, Duration.ofMinutes(1), WRITE);
            assertTrue(lease.rkey() != leased.region().rkey(), "never the chunk region's key");

            assertEquals(WcStatus.SUCCESS, peerWrite(lease.address(), lease.rkey(), 64));
            assertEquals((byte) 0x7e, leased.segment().get(ValueLayout.JAVA_BYTE, 63));
            assertEquals(WcStatus.REM_ACCESS_ERR, peerWrite(lease.address() + 8, lease.rkey(), 64), "one byte past");
            assertEquals(-1, neighbour.segment().mismatch(java.lang.foreign.MemorySegment.ofArray(new byte[64])),
                    "the neighbour is untouched");
            neighbour.close();
        }
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"WINDOW", "DEDICATED_REGISTRATION"})
    void aLateWriteAfterReleaseFailsAndReusedMemoryIsIntact(Isolation isolation) {
        try (LeaseManager leases = LeaseManager.create(ownerQp, LeaseLimits.DEFAULT, isolation)) {
            Block block = arena.allocate(64);
            Lease lease = leases.grant(block, Duration.ofMinutes(1), WRITE);
            long address = lease.address();
            int key = lease.rkey();
            lease.close();
            assertEquals(EndReason.RELEASED, lease.ended().join());
            assertFalse(lease.isActive());
            assertTrue(block.isOpen(), "a lease pins its block, it does not take it");
            block.close();
            try (Block reused = arena.allocate(64)) {
                assertEquals(address, reused.address(), "the block went back to the arena and was handed out again");
                reused.segment().fill((byte) 0x11);
                assertEquals(WcStatus.REM_ACCESS_ERR, peerWrite(address, key, 8));
                assertEquals((byte) 0x11, reused.segment().get(ValueLayout.JAVA_BYTE, 0), "reused memory is intact");
            }
            assertEquals(1, leases.stats().released());
        }
    }

    @ParameterizedTest
    @EnumSource(value = Isolation.class, names = {"WINDOW", "DEDICATED_REGISTRATION"})
    void theBlockIsNotReusedWhileAnOwnerRequestOnItIsInFlight(Isolation isolation) throws Exception {
        try (LeaseManager leases = LeaseManager.create(ownerQp, LeaseLimits.DEFAULT, isolation)) {
            Block block = arena.allocate(64);
            Lease lease = leases.grant(block, Duration.ofMinutes(1), WRITE);
            long address = lease.address();
            // The owner's own request on the block: a receive into it, outstanding until the peer sends.
            CompletableFuture<WorkCompletion> receive =
                    lease.postAsync(ownerQp, ReceiveRequest.into(block.region(), block.regionOffset(), 64));
            CompletableFuture<Void> end = leases.endAsync(lease, EndReason.RELEASED);
            assertFalse(lease.isActive());
            assertThrows(IllegalStateException.class, () -> lease.postAsync(ownerQp,
                    ReceiveRequest.into(block.region(), block.regionOffset(), 64)), "no new requests once ending");
            assertThrows(TimeoutException.class, () -> end.get(200, TimeUnit.MILLISECONDS));
            assertEquals(1, lease.inFlight());
            block.close(); // the application is done with it; the ending lease still pins its memory
            Block[] others = new Block[4];
            for (int i = 0; i < others.length; i++) {
                others[i] = arena.allocate(64);
                assertTrue(others[i].address() != address, "the block was handed out again while in flight");
                others[i].segment().fill((byte) 0x11);
            }

            assertEquals(WcStatus.SUCCESS, peerQp.postAsync(WorkRequest.send(peerSource, 0, 64)).get(10, TimeUnit.SECONDS).status());
            assertEquals(WcStatus.SUCCESS, receive.get(10, TimeUnit.SECONDS).status());
            end.get(10, TimeUnit.SECONDS);
            assertEquals(EndReason.RELEASED, lease.ended().join());
            assertEquals(0, lease.inFlight());
            for (Block other : others) {
                assertEquals(-1, other.segment().mismatch(MemorySegment.ofArray(new byte[64]).fill((byte) 0x11)),
                        "the SEND landed in the leased block, not in memory handed out meanwhile");
                other.close();
            }
        }
        arena.flushThreadCaches();
        assertEquals(0, arena.stats().liveBlocks());
    }

    @Test
    void aFlushedOwnerRequestEndsTheDrain() throws Exception {
        try (LeaseManager leases = LeaseManager.create(ownerQp, LeaseLimits.DEFAULT, Isolation.DEDICATED_REGISTRATION)) {
            Block block = arena.allocate(64);
            Lease lease = leases.grant(block, Duration.ofMinutes(1), WRITE);
            CompletableFuture<WorkCompletion> receive =
                    lease.postAsync(ownerQp, ReceiveRequest.into(block.region(), block.regionOffset(), 64));
            CompletableFuture<Void> end = leases.endAsync(lease, EndReason.SESSION_LOST);
            assertThrows(TimeoutException.class, () -> end.get(100, TimeUnit.MILLISECONDS));
            ownerQp.moveToError(); // the receive completes with WR_FLUSH_ERR: the NIC is done with the block
            var flushed = assertThrows(ExecutionException.class, () -> receive.get(10, TimeUnit.SECONDS));
            assertEquals(WcStatus.WR_FLUSH_ERR, ((WorkCompletionException) flushed.getCause()).status());
            end.get(10, TimeUnit.SECONDS);
            assertTrue(block.isOpen(), "the block stays the application's");
            block.close();
        }
    }

    /**
     * A lease pins its block: one block leased twice (a stored value read by two peers), closed by the application
     * while leased, ends both leases (OWNER_CLOSED) and its memory is reused only after their keys are revoked.
     */
    @Test
    void closingALeasedBlockEndsItsLeasesBeforeItsMemoryIsReused() {
        try (LeaseManager leases = LeaseManager.create(ownerQp, LeaseLimits.DEFAULT)) {
            Block value = arena.allocate(64);
            Lease first = leases.grant(value, Duration.ofMinutes(1), WRITE);
            Lease second = leases.grant(value, 16, 32, Duration.ofMinutes(1), WRITE);
            assertEquals(value.address() + 16, second.address());
            assertEquals(32, second.length());
            assertEquals(WcStatus.SUCCESS, peerWrite(second.address(), second.rkey(), 32));
            value.close();
            assertEquals(EndReason.OWNER_CLOSED, first.ended().orTimeout(10, TimeUnit.SECONDS).join());
            assertEquals(EndReason.OWNER_CLOSED, second.ended().orTimeout(10, TimeUnit.SECONDS).join());
            assertEquals(WcStatus.REM_ACCESS_ERR, peerWrite(first.address(), first.rkey(), 8));
            var refused = assertThrows(LeaseRefusedException.class, () -> leases.grant(value, Duration.ofSeconds(1), WRITE));
            assertTrue(refused.getMessage().contains("cannot lease"), refused.getMessage());
        }
        arena.flushThreadCaches();
        assertEquals(0, arena.stats().liveBlocks(), "the last lease's end freed the closed block");
    }

    @Test
    void anUnrenewedLeaseExpiresAndItsKeyStopsWorking() {
        var limits = LeaseLimits.builder().maxBytes(1 << 20).maxLeases(8)
                .maxDuration(Duration.ofSeconds(5)).maxLifetime(Duration.ofSeconds(10))
                .maxAccess(WRITE).grace(Duration.ZERO).build();
        try (LeaseManager leases = LeaseManager.create(ownerQp, limits)) {
            assertEquals(Isolation.WINDOW, leases.isolation(), "soft enforces window bounds");
            Lease lease = leases.grant(arena.allocate(128), Duration.ofMillis(100), WRITE);
            assertEquals(EndReason.EXPIRED, lease.ended().orTimeout(10, TimeUnit.SECONDS).join());
            assertEquals(WcStatus.REM_ACCESS_ERR, peerWrite(lease.address(), lease.rkey(), 8));
            assertEquals(1, leases.stats().expired());
            assertEquals(0, leases.stats().active());
        }
    }

    @Test
    void anExposureEndsWhenItsStageCompletes() {
        try (LeaseManager leases = LeaseManager.create(ownerQp, LeaseLimits.DEFAULT)) {
            var done = new CompletableFuture<Void>();
            Lease lease = leases.grant(arena.allocate(64), Duration.ofMinutes(1), WRITE, done);
            assertEquals(WcStatus.SUCCESS, peerWrite(lease.address(), lease.rkey(), 8));
            done.complete(null);
            assertEquals(EndReason.DONE, lease.ended().orTimeout(10, TimeUnit.SECONDS).join());
        }
    }

    @Test
    void limitsRefuseClearlyAndLeakNothing() {
        var limits = LeaseLimits.builder().maxBytes(256).maxLeases(2)
                .maxDuration(Duration.ofSeconds(5)).maxLifetime(Duration.ofSeconds(5))
                .maxAccess(WRITE).grace(Duration.ZERO).build();
        try (LeaseManager leases = LeaseManager.create(ownerQp, limits)) {
            Block firstBlock = arena.allocate(128);
            Lease first = leases.grant(firstBlock, Duration.ofSeconds(1), WRITE);
            Block big = arena.allocate(200);
            var bytes = assertThrows(LeaseRefusedException.class, () -> leases.grant(big, Duration.ofSeconds(1), WRITE));
            assertTrue(bytes.getMessage().contains("exceed the limit of 256"), bytes.getMessage());
            Block small = arena.allocate(64);
            var longer = assertThrows(LeaseRefusedException.class, () -> leases.grant(small, Duration.ofSeconds(9), WRITE));
            assertTrue(longer.getMessage().contains("outside (0, PT5S]"), longer.getMessage());
            var rights = assertThrows(LeaseRefusedException.class,
                    () -> leases.grant(small, Duration.ofSeconds(1), EnumSet.of(Access.REMOTE_READ)));
            assertTrue(rights.getMessage().contains("remote rights within"), rights.getMessage());
            leases.grant(small, Duration.ofSeconds(1), WRITE);
            Block third = arena.allocate(16);
            var count = assertThrows(LeaseRefusedException.class, () -> leases.grant(third, Duration.ofSeconds(1), WRITE));
            assertTrue(count.getMessage().contains("the limit is 2"), count.getMessage());
            sleepMillis(10);
            var lifetime = assertThrows(LeaseRefusedException.class, () -> leases.renew(first, Duration.ofSeconds(5)));
            assertTrue(lifetime.getMessage().contains("exceed its lifetime limit of PT5S"), lifetime.getMessage());
            assertEquals(5, leases.stats().refused());
            big.close();
            third.close();
            firstBlock.close();
            small.close();
        }
        arena.flushThreadCaches();
        assertEquals(0, arena.stats().liveBlocks(), "the manager's close released every pin");
    }

    @Test
    void renewalExtendsTheDeadline() throws Exception {
        try (LeaseManager leases = LeaseManager.create(ownerQp, LeaseLimits.DEFAULT)) {
            Lease lease = leases.grant(arena.allocate(64), Duration.ofMillis(300), WRITE);
            leases.renew(lease, Duration.ofSeconds(30));
            Thread.sleep(700);
            assertTrue(lease.isActive(), "renewed past its first deadline");
            assertEquals(WcStatus.SUCCESS, peerWrite(lease.address(), lease.rkey(), 8));
        }
    }

    @Test
    void losingTheSessionRevokesEveryLease() {
        try (LeaseManager leases = LeaseManager.create(ownerQp, LeaseLimits.DEFAULT)) {
            Block one = arena.allocate(64);
            Block two = arena.allocate(4096);
            Lease a = leases.grant(one, Duration.ofMinutes(1), WRITE);
            Lease b = leases.grant(two, Duration.ofMinutes(1), WRITE);
            ownerQp.moveToError(); // as when the peer dies: no invalidation can complete on this QP
            leases.endAll(EndReason.SESSION_LOST);
            assertEquals(EndReason.SESSION_LOST, a.ended().join());
            assertEquals(EndReason.SESSION_LOST, b.ended().join());
            one.close();
            two.close();
            arena.flushThreadCaches();
            assertEquals(0, arena.stats().liveBlocks());
            assertEquals(0, leases.stats().pooledWindows(), "windows that could not be invalidated were deallocated");
        }
    }

    @Test
    void closingTheManagerEndsEveryLease() {
        LeaseManager leases = LeaseManager.create(ownerQp, LeaseLimits.DEFAULT);
        Lease lease = leases.grant(arena.allocate(64), Duration.ofMinutes(1), WRITE);
        leases.close();
        assertEquals(EndReason.OWNER_CLOSED, lease.ended().join());
        try (Block refused = arena.allocate(64)) {
            var closed = assertThrows(LeaseRefusedException.class, () -> leases.grant(refused, Duration.ofSeconds(1), WRITE));
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
        }
    }

    private static void sleepMillis(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
