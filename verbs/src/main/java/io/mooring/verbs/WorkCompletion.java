package io.mooring.verbs;

/**
 * The outcome of one work request ({@code struct ibv_wc}).
 *
 * <p>{@link CompletionQueue#poll(WorkCompletion[])} fills caller-owned instances without allocating; such an
 * instance is overwritten by the next poll into the same array, so {@link #copy()} what must be kept.
 * Completions handed to futures and handlers are fresh instances.
 */
public final class WorkCompletion {
    private long wrId;
    private WcStatus status = WcStatus.SUCCESS;
    private WcOpcode opcode = WcOpcode.SEND;
    private int byteLength;
    private int immediate;
    private boolean hasImmediate;
    private int qpNumber;

    public WorkCompletion() {}

    void set(long wrId, WcStatus status, WcOpcode opcode, int byteLength, int immediate, boolean hasImmediate,
             int qpNumber) {
        this.wrId = wrId;
        this.status = status;
        this.opcode = opcode;
        this.byteLength = byteLength;
        this.immediate = immediate;
        this.hasImmediate = hasImmediate;
        this.qpNumber = qpNumber;
    }

    /** The id the request was posted with. */
    public long wrId() {
        return wrId;
    }

    public WcStatus status() {
        return status;
    }

    public boolean isSuccess() {
        return status == WcStatus.SUCCESS;
    }

    /** What the request was (known for failed requests too: Mooring remembers what it posted). */
    public WcOpcode opcode() {
        return opcode;
    }

    /** Bytes received (receives) or read (READ, atomics). */
    public int byteLength() {
        return byteLength;
    }

    /** Immediate data of a SEND_WITH_IMM or RDMA_WRITE_WITH_IMM, in host order. */
    public int immediate() {
        if (!hasImmediate) throw new IllegalStateException("completion of wr " + wrId + " carries no immediate data");
        return immediate;
    }

    public boolean hasImmediate() {
        return hasImmediate;
    }

    /** The local queue pair it belongs to. */
    public int qpNumber() {
        return qpNumber;
    }

    public WorkCompletion copy() {
        var c = new WorkCompletion();
        c.set(wrId, status, opcode, byteLength, immediate, hasImmediate, qpNumber);
        return c;
    }

    @Override
    public String toString() {
        return "WorkCompletion[wr " + wrId + " " + opcode + " " + status + ", " + byteLength + " bytes"
                + (hasImmediate ? ", imm 0x" + Integer.toHexString(immediate) : "") + ", qp " + qpNumber + "]";
    }
}
