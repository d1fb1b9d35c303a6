package io.mooring.verbs;

import io.mooring.verbs.values.RecvWr;

/**
 * A receive work request ({@code struct ibv_recv_wr}): where an incoming SEND (or the completion of a WRITE
 * with immediate) lands. Mutable and reusable: {@link #reset()} it and fill it again for the next post.
 */
public final class ReceiveRequest implements RecvWr {
    private final ScatterGatherList sgl = new ScatterGatherList();
    private long wrId;

    /** An empty request: no buffer yet, which is all the completion of a WRITE with immediate needs. */
    public ReceiveRequest() {
    }

    /** A request for {@code length} bytes at {@code offset} of {@code mr}. */
    public static ReceiveRequest into(MemoryRegion mr, long offset, int length) {
        return new ReceiveRequest().local(mr, offset, length);
    }

    public ReceiveRequest reset() {
        sgl.clear();
        wrId = 0;
        return this;
    }

    public ReceiveRequest wrId(long id) {
        this.wrId = id;
        return this;
    }

    /** Adds a buffer: {@code length} bytes at {@code offset} inside {@code mr} (checked; keeps it alive). */
    public ReceiveRequest local(MemoryRegion mr, long offset, int length) {
        sgl.add(mr, offset, length);
        return this;
    }

    /** Adds a raw buffer, unchecked: a bad address or lkey fails the receive with LOC_PROT_ERR. */
    public ReceiveRequest localUnchecked(long address, int length, int lkey) {
        sgl.addUnchecked(address, length, lkey);
        return this;
    }

    public long wrId() {
        return wrId;
    }

    public ScatterGatherList sgl() {
        return sgl;
    }
}
