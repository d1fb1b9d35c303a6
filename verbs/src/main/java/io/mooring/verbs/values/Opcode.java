package io.mooring.verbs.values;

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

    public boolean isAtomic() {
        return this == ATOMIC_CMP_AND_SWP || this == ATOMIC_FETCH_AND_ADD;
    }

    /** Whether it carries immediate data. */
    public boolean hasImmediate() {
        return this == RDMA_WRITE_WITH_IMM || this == SEND_WITH_IMM;
    }

    private static final Opcode[] BY_CODE = values();

    public static Opcode of(int code) {
        for (Opcode o : BY_CODE) if (o.code == code) return o;
        throw new IllegalArgumentException("no work request opcode has verbs code " + code);
    }
}
