package io.mooring.verbs.ibv;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** How {@link IbvCq} reads an {@code ibv_wc}, on structs written here (no device needed). */
class IbvCompletionDecodingTest {
    private record Seen(long wrId, int status, int opcode, int vendorError, int byteLength, int immediate, int flags,
                        int qpn) {}

    private static Seen decode(MemorySegment wc) {
        List<Seen> seen = new ArrayList<>();
        IbvCq.decode(wc, 0, (wrId, status, opcode, vendorError, byteLength, immediate, flags, qpn) ->
                seen.add(new Seen(wrId, status, opcode, vendorError, byteLength, immediate, flags, qpn)));
        assertEquals(1, seen.size());
        return seen.getFirst();
    }

    /** An {@code ibv_wc} as a driver leaves it. */
    private static MemorySegment wc(Arena arena, long wrId, int status, int opcode, int vendorErr, int byteLen,
                                    int flags) {
        MemorySegment wc = arena.allocate(IbvStructs.WC);
        wc.set(JAVA_LONG, IbvStructs.WC_WR_ID, wrId);
        wc.set(JAVA_INT, IbvStructs.WC_STATUS, status);
        wc.set(JAVA_INT, IbvStructs.WC_OPCODE, opcode);
        wc.set(JAVA_INT, IbvStructs.WC_VENDOR_ERR, vendorErr);
        wc.set(JAVA_INT, IbvStructs.WC_BYTE_LEN, byteLen);
        wc.set(IbvStructs.BE32, IbvStructs.WC_IMM_DATA, 0xC0FFEE);
        wc.set(JAVA_INT, IbvStructs.WC_QP_NUM, 17);
        wc.set(JAVA_INT, IbvStructs.WC_WC_FLAGS, flags);
        return wc;
    }

    @Test
    void aSuccessCarriesFlagsAndHostOrderImmediateButNoVendorError() {
        try (Arena arena = Arena.ofConfined()) {
            int flags = IbvStructs.IBV_WC_WITH_IMM | IbvStructs.IBV_WC_GRH;
            // vendor_err is left from an earlier completion in this array slot
            MemorySegment wc = wc(arena, 42, IbvStructs.IBV_WC_SUCCESS, IbvStructs.IBV_WC_RECV, 0x51, 100, flags);
            assertEquals(new Seen(42, IbvStructs.IBV_WC_SUCCESS, IbvStructs.IBV_WC_RECV, 0, 100, 0xC0FFEE, flags, 17),
                    decode(wc));
            wc.set(JAVA_INT, IbvStructs.WC_WC_FLAGS, IbvStructs.IBV_WC_GRH);
            assertEquals(0, decode(wc).immediate(), "immediate data only with IBV_WC_WITH_IMM");
        }
    }

    @Test
    void aFailureCarriesTheVendorErrorAndNothingTheDriverNeedNotWrite() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment wc = wc(arena, 7, IbvStructs.IBV_WC_REM_ACCESS_ERR, IbvStructs.IBV_WC_RDMA_READ, 0x88, 4096,
                    IbvStructs.IBV_WC_WITH_IMM);
            assertEquals(new Seen(7, IbvStructs.IBV_WC_REM_ACCESS_ERR, 0, 0x88, 0, 0, 0, 17), decode(wc));
        }
    }
}
