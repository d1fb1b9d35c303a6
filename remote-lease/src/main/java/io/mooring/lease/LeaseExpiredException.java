package io.mooring.lease;

/**
 * The lease's local deadline (a margin before the owner's) has passed, or is too near for the transfer to finish
 * before it: renew the lease before accessing it.
 */
public final class LeaseExpiredException extends LeaseEndedException {
    private static final long serialVersionUID = 1L;

    LeaseExpiredException(long leaseId, String message) {
        super(leaseId, message);
    }
}
