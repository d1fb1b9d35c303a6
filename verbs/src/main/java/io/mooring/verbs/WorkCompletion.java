package io.mooring.verbs;

import io.mooring.verbs.values.WcOpcode;

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
    private int vendorError;
    private int byteLength;
    private int immediate;
    private int flags;
    private int qpNumber;

    public WorkCompletion() {}

    void set(long wrId, WcStatus status, WcOpcode opcode, int vendorError, int byteLength, int immediate, int flags,
             int qpNumber) {
        this.wrId = wrId;
        this.status = status;
        this.opcode = opcode;
        this.vendorError = vendorError;
        this.byteLength = byteLength;
        this.immediate = immediate;
        this.flags = flags;
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

    /**
     * The device's own error syndrome ({@code vendor_err}) of a failed request, for its vendor's documentation; 0 on
     * success (where devices leave it undefined), and always 0 on {@code soft} and rxe.
     */
    public int vendorError() {
        return vendorError;
    }

    /** Bytes received (receives) or read (READ, atomics). */
    public int byteLength() {
        return byteLength;
    }

    /** Immediate data of a SEND_WITH_IMM or RDMA_WRITE_WITH_IMM, in host order. */
    public int immediate() {
        if (!hasImmediate()) throw new IllegalStateException("completion of wr " + wrId + " carries no immediate data");
        return immediate;
    }

    public boolean hasImmediate() {
        return has(WcFlag.WITH_IMM);
    }

    /**
     * The {@code IBV_WC_*} flags ({@code wc_flags}, see {@link WcFlag}); 0 on a failed request, where devices leave
     * them undefined.
     */
    public int flags() {
        return flags;
    }

    public boolean has(WcFlag flag) {
        return (flags & flag.bit()) != 0;
    }

    /** The local queue pair it belongs to. */
    public int qpNumber() {
        return qpNumber;
    }

    public WorkCompletion copy() {
        var c = new WorkCompletion();
        c.set(wrId, status, opcode, vendorError, byteLength, immediate, flags, qpNumber);
        return c;
    }

    @Override
    public String toString() {
        return "WorkCompletion[wr " + wrId + " " + opcode + " " + status + ", " + byteLength + " bytes"
                + (hasImmediate() ? ", imm 0x" + Integer.toHexString(immediate) : "")
                + (flags != 0 ? ", flags 0x" + Integer.toHexString(flags) : "")
                + (vendorError != 0 ? ", vendor_err 0x" + Integer.toHexString(vendorError) : "")
                + ", qp " + qpNumber + "]";
    }
}
