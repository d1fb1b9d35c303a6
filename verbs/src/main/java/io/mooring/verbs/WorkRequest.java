package io.mooring.verbs;

import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.Opcode;
import io.mooring.verbs.values.SendWr;
import java.util.Set;

/**
 * A send-queue work request ({@code struct ibv_send_wr}). Mutable and reusable, so a hot loop can post
 * without allocating: {@link #reset()} it and fill it again. The static factories are shorthands for the
 * common shapes:
 * <pre>{@code
 * qp.post(WorkRequest.write(local, 0, 64).remote(peerAddress, peerRkey).wrId(7));
 * qp.post(WorkRequest.send(local, 0, 128).immediate(42));
 * long old = qp.postAsync(WorkRequest.fetchAndAdd(result, 0, peerAddress, peerRkey, 1)).join() ...
 * }</pre>
 * Requests are signaled by default (each produces a completion); unsignaled ones complete silently unless
 * they fail, and are retired by the next signaled completion on the same queue pair.
 */
public final class WorkRequest implements SendWr {
    private static final int SIGNALED = 1 << 1;
    private static final int FENCE = 1;
    private static final int SOLICITED = 1 << 2;
    private static final int INLINE = 1 << 3;

    private final ScatterGatherList sgl = new ScatterGatherList();
    private Opcode opcode = Opcode.SEND;
    private long wrId;
    private int flags = SIGNALED;
    private long remoteAddress;
    private int rkey;
    private long compareAdd;
    private long swap;
    private int immediate;
    private int invalidateRkey;
    private MemoryWindow window;
    private MemoryRegion bindRegion;
    private long bindOffset;
    private long bindLength;
    private int bindAccess;

    public WorkRequest() {}

    // ---- shorthands -----------------------------------------------------------------------------------------

    public static WorkRequest send(MemoryRegion mr, long offset, int length) {
        return new WorkRequest().opcode(Opcode.SEND).local(mr, offset, length);
    }

    public static WorkRequest write(MemoryRegion mr, long offset, int length) {
        return new WorkRequest().opcode(Opcode.RDMA_WRITE).local(mr, offset, length);
    }

    /** Reads into {@code length} bytes at {@code offset} of {@code mr} (which needs LOCAL_WRITE). */
    public static WorkRequest read(MemoryRegion mr, long offset, int length) {
        return new WorkRequest().opcode(Opcode.RDMA_READ).local(mr, offset, length);
    }

    /** Compares the 8 bytes at the remote address with {@code expected}, swaps in {@code swap} if equal; the
     * original value lands in 8 bytes at {@code offset} of {@code result}. */
    public static WorkRequest compareAndSwap(MemoryRegion result, long offset, long remoteAddress, int rkey,
                                             long expected, long swap) {
        WorkRequest wr = new WorkRequest().opcode(Opcode.ATOMIC_CMP_AND_SWP).local(result, offset, Long.BYTES)
                .remote(remoteAddress, rkey);
        wr.compareAdd = expected;
        wr.swap = swap;
        return wr;
    }

    /** Adds {@code add} to the 8 bytes at the remote address; the original lands at {@code offset} of {@code result}. */
    public static WorkRequest fetchAndAdd(MemoryRegion result, long offset, long remoteAddress, int rkey, long add) {
        WorkRequest wr = new WorkRequest().opcode(Opcode.ATOMIC_FETCH_AND_ADD).local(result, offset, Long.BYTES)
                .remote(remoteAddress, rkey);
        wr.compareAdd = add;
        return wr;
    }

    /** Invalidates the type 2 window currently reachable through {@code rkey} (LOCAL_INV). */
    public static WorkRequest invalidate(int rkey) {
        WorkRequest wr = new WorkRequest().opcode(Opcode.LOCAL_INV);
        wr.invalidateRkey = rkey;
        return wr;
    }

    /**
     * Binds {@code window} to {@code length} bytes at {@code offset} of {@code region} with {@code access}
     * (BIND_MW). The window's new rkey is {@link MemoryWindow#rkey()} once the bind completes. The NIC fails the
     * bind with MW_BIND_ERR if the region lacks MW_BIND, or lacks LOCAL_WRITE while remote write or atomic
     * rights are asked for.
     */
    public static WorkRequest bind(MemoryWindow window, MemoryRegion region, long offset, long length,
                                   Set<Access> access) {
        if (offset < 0 || length <= 0 || offset > region.length() - length) {
            throw new IllegalArgumentException("window range [" + offset + ", +" + length + ") is outside " + region
                    + " of " + region.length() + " bytes");
        }
        WorkRequest wr = new WorkRequest().opcode(Opcode.BIND_MW);
        wr.window = window;
        wr.bindRegion = region;
        wr.bindOffset = offset;
        wr.bindLength = length;
        wr.bindAccess = Access.mask(access);
        return wr;
    }

    // ---- fluent setters -------------------------------------------------------------------------------------

    /** Clears everything back to a signaled SEND with no buffers. */
    public WorkRequest reset() {
        sgl.clear();
        opcode = Opcode.SEND;
        wrId = 0;
        flags = SIGNALED;
        remoteAddress = 0;
        rkey = 0;
        compareAdd = 0;
        swap = 0;
        immediate = 0;
        invalidateRkey = 0;
        window = null;
        bindRegion = null;
        bindOffset = 0;
        bindLength = 0;
        bindAccess = 0;
        return this;
    }

    public WorkRequest opcode(Opcode op) {
        this.opcode = op;
        return this;
    }

    public WorkRequest wrId(long id) {
        this.wrId = id;
        return this;
    }

    /** Whether it produces a completion on success (default true). */
    public WorkRequest signaled(boolean on) {
        return flag(SIGNALED, on);
    }

    /** Copy the payload at post time instead of reading it later; lkeys are then not needed. */
    public WorkRequest inline(boolean on) {
        return flag(INLINE, on);
    }

    /** Wait for preceding READs and atomics to complete before this one starts. */
    public WorkRequest fence(boolean on) {
        return flag(FENCE, on);
    }

    public WorkRequest solicited(boolean on) {
        return flag(SOLICITED, on);
    }

    private WorkRequest flag(int bit, boolean on) {
        flags = on ? flags | bit : flags & ~bit;
        return this;
    }

    /** Adds a local buffer: {@code length} bytes at {@code offset} inside {@code mr} (checked; keeps it alive). */
    public WorkRequest local(MemoryRegion mr, long offset, int length) {
        sgl.add(mr, offset, length);
        return this;
    }

    /** Adds a raw local buffer, unchecked: a bad address or lkey fails the request with LOC_PROT_ERR. */
    public WorkRequest localUnchecked(long address, int length, int lkey) {
        sgl.addUnchecked(address, length, lkey);
        return this;
    }

    /** The remote buffer of a WRITE, READ or atomic. */
    public WorkRequest remote(long address, int key) {
        this.remoteAddress = address;
        this.rkey = key;
        return this;
    }

    /** Immediate data (host order) for SEND_WITH_IMM or RDMA_WRITE_WITH_IMM; switches the opcode to match. */
    public WorkRequest immediate(int value) {
        this.immediate = value;
        if (opcode == Opcode.SEND) opcode = Opcode.SEND_WITH_IMM;
        if (opcode == Opcode.RDMA_WRITE) opcode = Opcode.RDMA_WRITE_WITH_IMM;
        return this;
    }

    // ---- what providers read --------------------------------------------------------------------------------

    public Opcode opcode() {
        return opcode;
    }

    public long wrId() {
        return wrId;
    }

    /** {@code IBV_SEND_*} flags. */
    public int flags() {
        return flags;
    }

    public boolean isSignaled() {
        return (flags & SIGNALED) != 0;
    }

    public boolean isInline() {
        return (flags & INLINE) != 0;
    }

    public ScatterGatherList sgl() {
        return sgl;
    }

    public long remoteAddress() {
        return remoteAddress;
    }

    public int rkey() {
        return rkey;
    }

    /** The compare operand of CMP_AND_SWP, or the addend of FETCH_AND_ADD. */
    public long compareAdd() {
        return compareAdd;
    }

    public long swap() {
        return swap;
    }

    public int immediate() {
        return immediate;
    }

    public int invalidateRkey() {
        return invalidateRkey;
    }

    MemoryWindow window() {
        return window;
    }

    MemoryRegion bindRegion() {
        return bindRegion;
    }

    long bindOffset() {
        return bindOffset;
    }

    long bindLength() {
        return bindLength;
    }

    int bindAccess() {
        return bindAccess;
    }
}
