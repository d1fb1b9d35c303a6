package io.mooring.verbs;

/** What a send work request does ({@code enum ibv_wr_opcode}). */
public enum Opcode {
    RDMA_WRITE(0, WcOpcode.RDMA_WRITE),
    RDMA_WRITE_WITH_IMM(1, WcOpcode.RDMA_WRITE),
    SEND(2, WcOpcode.SEND),
    SEND_WITH_IMM(3, WcOpcode.SEND),
    RDMA_READ(4, WcOpcode.RDMA_READ),
    ATOMIC_CMP_AND_SWP(5, WcOpcode.COMP_SWAP),
    ATOMIC_FETCH_AND_ADD(6, WcOpcode.FETCH_ADD),
    LOCAL_INV(7, WcOpcode.LOCAL_INV),
    BIND_MW(8, WcOpcode.BIND_MW);

    private final int code;
    private final WcOpcode completion;

    Opcode(int code, WcOpcode completion) {
        this.code = code;
        this.completion = completion;
    }

    /** The verbs code ({@code IBV_WR_*}). */
    public int code() {
        return code;
    }

    /** The opcode its successful completion reports. */
    public WcOpcode completion() {
        return completion;
    }

    /** Whether it touches remote memory through an rkey. */
    public boolean isRemoteAccess() {
        return this == RDMA_WRITE || this == RDMA_WRITE_WITH_IMM || this == RDMA_READ || isAtomic();
    }

    public boolean isAtomic() {
        return this == ATOMIC_CMP_AND_SWP || this == ATOMIC_FETCH_AND_ADD;
    }

    /** Whether the local NIC writes into the request's scatter/gather list (READ and atomic results). */
    public boolean writesLocalMemory() {
        return this == RDMA_READ || isAtomic();
    }

    /** Whether it carries immediate data. */
    public boolean hasImmediate() {
        return this == RDMA_WRITE_WITH_IMM || this == SEND_WITH_IMM;
    }

    /** Whether it consumes a receive request at the responder. */
    public boolean consumesReceive() {
        return this == SEND || this == SEND_WITH_IMM || this == RDMA_WRITE_WITH_IMM;
    }

    private static final Opcode[] BY_CODE = values();

    public static Opcode of(int code) {
        for (Opcode o : BY_CODE) if (o.code == code) return o;
        throw new IllegalArgumentException("no work request opcode has verbs code " + code);
    }
}
