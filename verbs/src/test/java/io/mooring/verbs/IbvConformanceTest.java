package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.testing.FaultPlan;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The conformance suite against the first ibv device (rxe0 in the VM), opened twice: two contexts on one
 * device, as the in-JVM soft test does. Skipped, with the reason, where there is no ibv device.
 */
class IbvConformanceTest extends VerbsConformance {
    private static String device;

    @BeforeAll
    static void requireDevice() {
        device = IbvDevice.require();
    }

    @Override
    DeviceContext openFirst(ResourceGraph graph) {
        return RdmaDevices.open("ibv:" + device, graph);
    }

    @Override
    DeviceContext openSecond(ResourceGraph graph) {
        return RdmaDevices.open("ibv:" + device, graph);
    }

    /**
     * Where rxe (Linux 6.1 drivers/infiniband/sw/rxe, rdma-core 44 providers/rxe) reports another status than a
     * NIC does, as observed on rxe0 and explained by its source: a SEND that overflows the receive fails the
     * receive WQE copy as a malformed WQE ({@code RESPST_ERR_MALFORMED_WQE}: REM_OP_ERR at the requester,
     * LOC_QP_OP_ERR at the responder) rather than as a length error; an invalid lkey is reported as LOC_QP_OP_ERR;
     * a QP without remote write treats the WRITE as an invalid opcode for it ({@code check_op_valid}:
     * REM_INV_REQ_ERR) instead of an access error. On every other device the spec statuses are expected.
     */
    @Override
    WcStatus expected(Deviation situation, WcStatus standard) {
        if (!IbvDevice.isRxe()) return standard;
        return switch (situation) {
            case SEND_TOO_LONG_REQUESTER -> WcStatus.REM_OP_ERR;
            case SEND_TOO_LONG_RESPONDER -> WcStatus.LOC_QP_OP_ERR;
            case BAD_LKEY -> WcStatus.LOC_QP_OP_ERR;
            case QP_DENIES_REMOTE_WRITE -> WcStatus.REM_INV_REQ_ERR;
        };
    }

    /** rdma-core's rxe provider validates atomics in {@code post_send} ({@code validate_send_wr}): EINVAL. */
    @Override
    boolean refusesMisalignedAtomicsAtPost() {
        return IbvDevice.isRxe();
    }

    /**
     * On RoCE the kernel replaces the hop limit with its route's when it resolves the peer's address
     * ({@code ib_resolve_eth_dmac}), and rxe keeps no service level in its address vector ({@code struct rxe_av}).
     */
    @Override
    boolean keepsServiceLevelAndHopLimit() {
        return false;
    }

    /** A real NIC's faults cannot be scheduled: injecting them is refused with a pointer to the soft provider. */
    @Test
    void faultInjectionIsRefused() {
        var refused = assertThrows(UnsupportedOperationException.class,
                () -> a.context.injectFaults(FaultPlan.seeded(1)));
        assertTrue(refused.getMessage().contains("soft provider"), refused::getMessage);
        assertThrows(UnsupportedOperationException.class, () -> a.qp.injectFaults(FaultPlan.seeded(1)));
    }

    /** rxe checks an access through a window's rkey against the whole region (mainline kernels still do). */
    @Override
    boolean enforcesWindowBounds() {
        return !IbvDevice.isRxe();
    }
}
