package io.mooring.verbs.values;

/**
 * What a provider reads of a send-queue work request ({@code struct ibv_send_wr}), in verbs terms: the opcode, the
 * {@code IBV_SEND_*} flags, the local buffers and the remote side. {@link io.mooring.verbs.WorkRequest} is the request
 * applications build; the provider posts it with the id the public layer assigns instead of {@link #wrId}.
 */
public interface SendWr {
    Opcode opcode();

    /** The caller's id, reported in the completion. */
    long wrId();

    /** {@code IBV_SEND_*} flags. */
    int flags();

    boolean isSignaled();

    boolean isInline();

    SgeList sgl();

    long remoteAddress();

    int rkey();

    /** The compare operand of a compare-and-swap, the addend of a fetch-and-add. */
    long compareAdd();

    long swap();

    /** Immediate data in host order. */
    int immediate();

    /** The rkey a LOCAL_INV invalidates. */
    int invalidateRkey();
}
