package io.mooring.lease;

/**
 * The agent's control messages. Each travels in one SEND, in the encoding of {@link MessageCodec}; a
 * {@code requestId} pairs answers with requests.
 */
sealed interface Message {
    long requestId();

    /** Asks for a lease of {@code size} bytes the holder may access with {@code access} for {@code durationNanos}. */
    record Request(long requestId, long size, long alignment, int access, long durationNanos) implements Message {}

    /** A lease: the holder may reach {@code [address, address + length)} through {@code rkey} until it ends. */
    record Grant(long requestId, long leaseId, long address, long length, int rkey, long durationNanos)
            implements Message {}

    /**
     * The owner offers a lease it made on its own (async-rdma's {@code send_local_mr}): the receiver may reach
     * {@code [address, address + length)} through {@code rkey} with {@code access} until it ends; {@code tag} is the
     * application's word on what the lease is for.
     */
    record Offer(long requestId, long leaseId, long address, long length, int rkey, int access, long durationNanos,
                 long tag) implements Message {}

    /** Asks to extend a lease by {@code durationNanos} from now. */
    record Renew(long requestId, long leaseId, long durationNanos) implements Message {}

    /** The lease now lasts {@code durationNanos} from when the owner sent this. */
    record Renewed(long requestId, long leaseId, long durationNanos) implements Message {}

    /** The holder is done with a lease. */
    record Release(long requestId, long leaseId) implements Message {}

    /** The lease has ended and its window is invalidated. */
    record ReleaseAck(long requestId, long leaseId) implements Message {}

    /**
     * The owner is ending a lease on its own ({@code reason}: an {@link EndReason} code): the holder stops posting on
     * it and, once its accesses in flight have completed, acknowledges with a RELEASE; then the key is revoked.
     */
    record Revoke(long requestId, long leaseId, int reason) implements Message {}

    /**
     * The sender has taken {@code messages} more of the receiver's application messages off its queue: the receiver
     * may send that many more (credit-based flow control, so a fast sender never meets an empty receive queue).
     */
    record Credit(long requestId, int messages) implements Message {}

    /** A request was refused or not understood. */
    record Error(long requestId, int code, String message) implements Message {}
}
