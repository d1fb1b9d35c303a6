package io.mooring.verbs.values;

/** What a completed work request did ({@code enum ibv_wc_opcode}); meaningful only on success. */
public enum WcOpcode {
    SEND(0), RDMA_WRITE(1), RDMA_READ(2), COMP_SWAP(3), FETCH_ADD(4), BIND_MW(5), LOCAL_INV(6),
    RECV(128), RECV_RDMA_WITH_IMM(129);

    private final int code;

    WcOpcode(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    /** Whether it completes a receive request (as opposed to a send-queue request). */
    public boolean isReceive() {
        return code >= 128;
    }

    public static WcOpcode of(int code) {
        return switch (code) {
            case 0 -> SEND;
            case 1 -> RDMA_WRITE;
            case 2 -> RDMA_READ;
            case 3 -> COMP_SWAP;
            case 4 -> FETCH_ADD;
            case 5 -> BIND_MW;
            case 6 -> LOCAL_INV;
            case 128 -> RECV;
            case 129 -> RECV_RDMA_WITH_IMM;
            default -> throw new IllegalArgumentException("no completion opcode has verbs code " + code);
        };
    }
}
