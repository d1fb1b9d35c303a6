package io.mooring.lease;

/**
 * The owner revoked the lease (it closed the lease or its block, the lease expired on its side, or its session ended):
 * the segment refuses new accesses from the moment the owner asked, while those already in flight complete.
 */
public final class LeaseRevokedException extends LeaseEndedException {
    private static final long serialVersionUID = 1L;

    private final EndReason reason;

    LeaseRevokedException(long leaseId, EndReason reason) {
        super(leaseId, "lease " + leaseId + " was revoked by its owner (" + reason + ")");
        this.reason = reason;
    }

    /** Why the owner ended the lease. */
    public EndReason reason() {
        return reason;
    }
}
