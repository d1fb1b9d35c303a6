package io.mooring.verbs.soft;

import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Opcode;
import io.mooring.verbs.values.SendWr;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A send-queue request as the soft NIC keeps it: copied at post time (the caller reuses its {@link WorkRequest}),
 * inline data included, as a NIC copies a request into its work queue entry. Mutable and reused in the QP's
 * {@link WorkRing}; a bind fills the window fields, every other opcode the rest.
 */
final class SendWork implements WorkRing.Entry<SendWork> {
    long wrId;
    Opcode opcode;
    boolean signaled;
    final Sges sges = new Sges();
    private final int maxInline;
    byte[] inline; // made by the first inline request: most queues never send one
    int inlineLength = -1; // -1: not inline
    long remoteAddress;
    int rkey;
    long compareAdd;
    long swap;
    int immediate;
    int invalidateRkey;
    SoftMw window;
    SoftMr bindRegion;
    long bindAddress;
    long bindLength;
    int bindAccess;
    int newRkey;

    SendWork(int maxInline) {
        this.maxInline = maxInline;
    }

    /** A request of {@code wr} under {@code wrId}; inline data is copied now, from raw addresses as the NIC does. */
    @SuppressWarnings("restricted") // raw addresses, as ibv_post_send takes them
    void set(SendWr wr, long wrId) {
        this.wrId = wrId;
        opcode = wr.opcode();
        signaled = wr.isSignaled();
        sges.copyFrom(wr.sgl());
        inlineLength = -1;
        if (wr.isInline()) {
            reserveInline();
            int at = 0;
            for (int i = 0; i < sges.count; i++) {
                MemorySegment.copy(MemorySegment.ofAddress(sges.address(i)).reinterpret(sges.length(i)),
                        ValueLayout.JAVA_BYTE, 0, inline, at, sges.length(i));
                at += sges.length(i);
            }
            inlineLength = at;
        }
        remoteAddress = wr.remoteAddress();
        rkey = wr.rkey();
        compareAdd = wr.compareAdd();
        swap = wr.swap();
        immediate = wr.immediate();
        invalidateRkey = wr.invalidateRkey();
        window = null;
        bindRegion = null;
    }

    /** A bind of {@code window} over {@code [address, +length)} of {@code region}, giving it {@code newRkey}. */
    void setBind(long wrId, boolean signaled, SoftMw window, SoftMr region, long address, long length, int access,
                 int newRkey) {
        this.wrId = wrId;
        opcode = Opcode.BIND_MW;
        this.signaled = signaled;
        sges.count = 0;
        inlineLength = -1;
        this.window = window;
        bindRegion = region;
        bindAddress = address;
        bindLength = length;
        bindAccess = access;
        this.newRkey = newRkey;
    }

    private void reserveInline() {
        if (inline == null) inline = new byte[maxInline];
    }

    @Override
    public void copyFrom(SendWork o) {
        wrId = o.wrId;
        opcode = o.opcode;
        signaled = o.signaled;
        sges.copyFrom(o.sges);
        inlineLength = o.inlineLength;
        if (inlineLength > 0) {
            reserveInline();
            System.arraycopy(o.inline, 0, inline, 0, inlineLength);
        }
        remoteAddress = o.remoteAddress;
        rkey = o.rkey;
        compareAdd = o.compareAdd;
        swap = o.swap;
        immediate = o.immediate;
        invalidateRkey = o.invalidateRkey;
        window = o.window;
        bindRegion = o.bindRegion;
        bindAddress = o.bindAddress;
        bindLength = o.bindLength;
        bindAccess = o.bindAccess;
        newRkey = o.newRkey;
    }
}
