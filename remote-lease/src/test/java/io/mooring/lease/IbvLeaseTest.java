package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.values.DeviceInfo;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Leases on real verbs (rxe0 in the VM of scripts/rxe-test.sh; skipped, with the reason, without an ibv device).
 * rxe checks an access through a window against the whole region, so the probe must choose
 * DEDICATED_REGISTRATION, and a peer must still reach nothing outside its lease: not one byte past it, not the
 * slab neighbour, and nothing once the lease ended and the block was handed out again.
 */
class IbvLeaseTest extends LeasePeers {
    private static String device;

    @BeforeAll
    static void requireDevice() {
        String why;
        try {
            List<DeviceInfo> devices = RdmaDevices.devices("ibv");
            why = devices.isEmpty() ? "no RDMA device: ibv_get_device_list lists none" : null;
            if (why == null) device = devices.getFirst().name();
        } catch (VerbsException e) {
            why = "no RDMA device: " + e.getMessage() + " (run scripts/rxe-test.sh for the Soft-RoCE VM)";
        }
        Assumptions.assumeTrue(device != null, why);
    }

    @Override
    String device() {
        return "ibv:" + device;
    }

    /** A rejected access leaves both QPs in ERROR: they are reconnected for the next write. */
    @Override
    WcStatus peerWrite(long address, int rkey, int length) {
        WcStatus status = super.peerWrite(address, rkey, length);
        if (status != WcStatus.SUCCESS) {
            ownerQp.reset();
            peerQp.reset();
            ownerQp.connect(peerQp.info());
            peerQp.connect(ownerQp.info());
        }
        return status;
    }

    @Test
    void theProbeChoosesDedicatedRegistrationAndAPeerReachesNothingOutsideItsLease() {
        var limits = LeaseLimits.builder().maxBytes(1 << 20).maxLeases(8)
                .maxDuration(Duration.ofMinutes(1)).maxLifetime(Duration.ofMinutes(2))
                .maxAccess(WRITE).grace(Duration.ZERO).build();
        try (LeaseManager leases = LeaseManager.create(ownerQp, limits)) {
            assertEquals(Isolation.DEDICATED_REGISTRATION, leases.isolation(), "rxe does not enforce window bounds");
            Block one = arena.allocate(64);
            Block two = arena.allocate(64);
            Block leased = one.address() < two.address() ? one : two;
            Block neighbour = leased == one ? two : one;
            assertEquals(leased.address() + 64, neighbour.address(), "slab neighbours");
            neighbour.segment().fill((byte) 0);
            Lease lease = leases.grant(leased, Duration.ofMinutes(1), WRITE);
            assertTrue(lease.rkey() != leased.region().rkey(), "never the chunk region's key");

            assertEquals(WcStatus.SUCCESS, peerWrite(lease.address(), lease.rkey(), 64));
            assertEquals((byte) 0x7e, leased.segment().get(ValueLayout.JAVA_BYTE, 63));
            assertEquals(WcStatus.REM_ACCESS_ERR, peerWrite(lease.address() + 1, lease.rkey(), 64), "one byte past");
            assertEquals(WcStatus.REM_ACCESS_ERR, peerWrite(neighbour.address(), lease.rkey(), 8), "the neighbour");
            assertEquals(-1, neighbour.segment().mismatch(MemorySegment.ofArray(new byte[64])), "neighbour untouched");

            long address = lease.address();
            int key = lease.rkey();
            lease.close();
            assertEquals(EndReason.RELEASED, lease.ended().orTimeout(20, TimeUnit.SECONDS).join());
            leased.close(); // the lease only pinned it: the application frees it
            try (Block reused = arena.allocate(64)) {
                assertEquals(address, reused.address(), "the block went back to the arena and was handed out again");
                reused.segment().fill((byte) 0x11);
                assertEquals(WcStatus.REM_ACCESS_ERR, peerWrite(address, key, 8), "the late write");
                assertEquals(-1, reused.segment().mismatch(MemorySegment.ofArray(new byte[64]).fill((byte) 0x11)),
                        "reused memory intact");
            }
            neighbour.close();
        }
    }
}
