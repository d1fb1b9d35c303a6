package io.mooring.verbs.ibv;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mooring.verbs.WcFlag;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.Mtu;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.Opcode;
import io.mooring.verbs.values.QpAttribute;
import io.mooring.verbs.values.QpState;
import io.mooring.verbs.values.WcOpcode;
import org.junit.jupiter.api.Test;

/**
 * The SPI passes values in verbs encoding and the provider copies them into native structs as they are; this
 * ties the public enums' codes to the gcc-verified constants of {@link IbvStructs}.
 */
class IbvEncodingTest {
    @Test
    void workRequestOpcodes() {
        assertEquals(IbvStructs.IBV_WR_RDMA_WRITE, Opcode.RDMA_WRITE.code());
        assertEquals(IbvStructs.IBV_WR_RDMA_WRITE_WITH_IMM, Opcode.RDMA_WRITE_WITH_IMM.code());
        assertEquals(IbvStructs.IBV_WR_SEND, Opcode.SEND.code());
        assertEquals(IbvStructs.IBV_WR_SEND_WITH_IMM, Opcode.SEND_WITH_IMM.code());
        assertEquals(IbvStructs.IBV_WR_RDMA_READ, Opcode.RDMA_READ.code());
        assertEquals(IbvStructs.IBV_WR_ATOMIC_CMP_AND_SWP, Opcode.ATOMIC_CMP_AND_SWP.code());
        assertEquals(IbvStructs.IBV_WR_ATOMIC_FETCH_AND_ADD, Opcode.ATOMIC_FETCH_AND_ADD.code());
        assertEquals(IbvStructs.IBV_WR_LOCAL_INV, Opcode.LOCAL_INV.code());
        assertEquals(IbvStructs.IBV_WR_BIND_MW, Opcode.BIND_MW.code());
    }

    @Test
    void completionOpcodesAndStatuses() {
        assertEquals(IbvStructs.IBV_WC_SEND, WcOpcode.SEND.code());
        assertEquals(IbvStructs.IBV_WC_RDMA_WRITE, WcOpcode.RDMA_WRITE.code());
        assertEquals(IbvStructs.IBV_WC_RDMA_READ, WcOpcode.RDMA_READ.code());
        assertEquals(IbvStructs.IBV_WC_COMP_SWAP, WcOpcode.COMP_SWAP.code());
        assertEquals(IbvStructs.IBV_WC_FETCH_ADD, WcOpcode.FETCH_ADD.code());
        assertEquals(IbvStructs.IBV_WC_BIND_MW, WcOpcode.BIND_MW.code());
        assertEquals(IbvStructs.IBV_WC_LOCAL_INV, WcOpcode.LOCAL_INV.code());
        assertEquals(IbvStructs.IBV_WC_RECV, WcOpcode.RECV.code());
        assertEquals(IbvStructs.IBV_WC_RECV_RDMA_WITH_IMM, WcOpcode.RECV_RDMA_WITH_IMM.code());
        for (WcStatus s : WcStatus.values()) {
            assertEquals("IBV_WC_" + s.name(), IbvStructs.wcStatusName(s.code()));
        }
    }

    @Test
    void qpAttributeMaskBitsAndCompletionFlags() {
        assertEquals(IbvStructs.IBV_QP_STATE, QpAttribute.STATE.bit());
        assertEquals(IbvStructs.IBV_QP_ACCESS_FLAGS, QpAttribute.ACCESS_FLAGS.bit());
        assertEquals(IbvStructs.IBV_QP_PKEY_INDEX, QpAttribute.PKEY_INDEX.bit());
        assertEquals(IbvStructs.IBV_QP_PORT, QpAttribute.PORT.bit());
        assertEquals(IbvStructs.IBV_QP_AV, QpAttribute.ADDRESS_VECTOR.bit());
        assertEquals(IbvStructs.IBV_QP_PATH_MTU, QpAttribute.PATH_MTU.bit());
        assertEquals(IbvStructs.IBV_QP_TIMEOUT, QpAttribute.TIMEOUT.bit());
        assertEquals(IbvStructs.IBV_QP_RETRY_CNT, QpAttribute.RETRY_COUNT.bit());
        assertEquals(IbvStructs.IBV_QP_RNR_RETRY, QpAttribute.RNR_RETRY.bit());
        assertEquals(IbvStructs.IBV_QP_RQ_PSN, QpAttribute.RQ_PSN.bit());
        assertEquals(IbvStructs.IBV_QP_MAX_QP_RD_ATOMIC, QpAttribute.MAX_RD_ATOMIC.bit());
        assertEquals(IbvStructs.IBV_QP_MIN_RNR_TIMER, QpAttribute.MIN_RNR_TIMER.bit());
        assertEquals(IbvStructs.IBV_QP_SQ_PSN, QpAttribute.SQ_PSN.bit());
        assertEquals(IbvStructs.IBV_QP_MAX_DEST_RD_ATOMIC, QpAttribute.MAX_DEST_RD_ATOMIC.bit());
        assertEquals(IbvStructs.IBV_QP_DEST_QPN, QpAttribute.DEST_QPN.bit());
        assertEquals(IbvStructs.IBV_WC_GRH, WcFlag.GRH.bit());
        assertEquals(IbvStructs.IBV_WC_WITH_IMM, WcFlag.WITH_IMM.bit());
        assertEquals(IbvStructs.IBV_WC_IP_CSUM_OK, WcFlag.IP_CSUM_OK.bit());
        assertEquals(IbvStructs.IBV_WC_WITH_INV, WcFlag.WITH_INV.bit());
    }

    @Test
    void accessFlagsStatesMtusWindowsAndSendFlags() {
        assertEquals(IbvStructs.IBV_ACCESS_LOCAL_WRITE, Access.LOCAL_WRITE.bit());
        assertEquals(IbvStructs.IBV_ACCESS_REMOTE_WRITE, Access.REMOTE_WRITE.bit());
        assertEquals(IbvStructs.IBV_ACCESS_REMOTE_READ, Access.REMOTE_READ.bit());
        assertEquals(IbvStructs.IBV_ACCESS_REMOTE_ATOMIC, Access.REMOTE_ATOMIC.bit());
        assertEquals(IbvStructs.IBV_ACCESS_MW_BIND, Access.MW_BIND.bit());
        int[] states = {IbvStructs.IBV_QPS_RESET, IbvStructs.IBV_QPS_INIT, IbvStructs.IBV_QPS_RTR,
            IbvStructs.IBV_QPS_RTS, IbvStructs.IBV_QPS_SQD, IbvStructs.IBV_QPS_SQE, IbvStructs.IBV_QPS_ERR};
        for (int i = 0; i < states.length; i++) assertEquals(states[i], QpState.values()[i].code());
        assertEquals(IbvStructs.IBV_MTU_256, Mtu.MTU_256.code());
        assertEquals(IbvStructs.IBV_MTU_1024, Mtu.MTU_1024.code());
        assertEquals(IbvStructs.IBV_MTU_4096, Mtu.MTU_4096.code());
        assertEquals(IbvStructs.IBV_MW_TYPE_1, MwType.TYPE_1.code());
        assertEquals(IbvStructs.IBV_MW_TYPE_2, MwType.TYPE_2.code());
        assertEquals(IbvStructs.IBV_SEND_SIGNALED, new WorkRequest().flags());
        assertEquals(IbvStructs.IBV_SEND_INLINE | IbvStructs.IBV_SEND_FENCE | IbvStructs.IBV_SEND_SOLICITED,
                new WorkRequest().signaled(false).inline(true).fence(true).solicited(true).flags());
    }
}
