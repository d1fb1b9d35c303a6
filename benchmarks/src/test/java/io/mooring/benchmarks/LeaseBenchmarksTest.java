package io.mooring.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lease.EndReason;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletionException;
import io.mooring.verbs.WorkRequest;
import java.util.concurrent.CompletionException;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The lease benchmarks driven the way JMH drives them (state setup, a few operations on a FastThreadLocalThread,
 * teardown, which fails on a lease left behind), without measuring: a broken setup shows up in the normal run.
 */
class LeaseBenchmarksTest {
    private static final int OPERATIONS = 5;
    /** Sessions closing (one side sees the other go) and the provoked late write are logged: not test output. */
    private final Logger leaseLog = Logger.getLogger("io.mooring.lease");
    private Level level;

    @BeforeEach
    void quiet() {
        level = leaseLog.getLevel();
        leaseLog.setLevel(Level.OFF);
    }

    @AfterEach
    void restore() {
        leaseLog.setLevel(level);
    }

    @Test
    void grantReleaseRoundTripsLeaveNoLease() throws Exception {
        MemoryOverhead.onFastThread(() -> {
            var benchmark = new LeaseGrantRelease();
            var window = new LeaseSessions.Window();
            window.open();
            for (int i = 0; i < OPERATIONS; i++) benchmark.grantReleaseWindow(window);
            assertEquals(OPERATIONS, window.owner.leases().stats().released());
            window.close();
            var dedicated = new LeaseSessions.Dedicated();
            dedicated.open();
            for (int i = 0; i < OPERATIONS; i++) benchmark.grantReleaseDedicated(dedicated);
            dedicated.close();
            return null;
        });
    }

    @Test
    void plainAndLeasedWritesReachTheLeasedBlock() throws Exception {
        MemoryOverhead.onFastThread(() -> {
            var benchmark = new LeaseWrite();
            var leased = new LeaseWrite.Leased();
            leased.open();
            for (int i = 0; i < OPERATIONS; i++) {
                benchmark.rdmaWrite(leased);
                benchmark.rdmaWriteLeased(leased);
            }
            var lease = leased.owner.leases().lease(leased.segment.leaseId());
            assertEquals((byte) 0x2a, lease.block().segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 63));
            leased.close();
            return null;
        });
    }

    @Test
    void revocationsGiveTheBlockBackAndKillTheKey() throws Exception {
        MemoryOverhead.onFastThread(() -> {
            var benchmark = new LeaseRevoke();
            var window = new LeaseSessions.Window();
            window.open();
            var granted = new LeaseRevoke.GrantedWindow();
            for (int i = 0; i < OPERATIONS; i++) {
                granted.grant(window);
                assertFalse(benchmark.revokeWindow(granted), "the lease has ended when close() returns");
            }
            try (var src = window.requesterArena.allocateShared(8, 8)) { // the last lease's key no longer works
                var late = assertThrows(CompletionException.class, () -> window.requester.queuePair().postAsync(
                        WorkRequest.write(src.region(), src.regionOffset(), 8).remote(granted.lease.address(),
                                granted.lease.rkey())).join());
                assertEquals(WcStatus.REM_ACCESS_ERR, ((WorkCompletionException) late.getCause()).status());
            }
            window.close();
            var dedicated = new LeaseSessions.Dedicated();
            dedicated.open();
            var grantedDedicated = new LeaseRevoke.GrantedDedicated();
            for (int i = 0; i < OPERATIONS; i++) {
                grantedDedicated.grant(dedicated);
                assertFalse(benchmark.revokeDedicated(grantedDedicated));
            }
            dedicated.close();
            var noGrace = new LeaseRevoke.NoGrace();
            noGrace.open();
            for (int i = 0; i < OPERATIONS; i++) assertEquals(EndReason.EXPIRED, benchmark.expire1ms(noGrace));
            assertTrue(noGrace.manager.stats().expired() == OPERATIONS);
            noGrace.close();
            return null;
        });
    }
}
