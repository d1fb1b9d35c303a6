package io.mooring.lease;

import io.mooring.lifecycle.MooringException;

/**
 * A holder's access was refused before anything was posted because the lease is over for it: the owner revoked it
 * ({@link LeaseRevokedException}) or its local deadline passed ({@link LeaseExpiredException}). Nothing reached the
 * NIC and the session goes on; ask for a new lease (or wait for a new offer) to go on with the data. (An
 * {@code IllegalStateException} until #29 put it under the one root.)
 */
public abstract sealed class LeaseEndedException extends MooringException
        permits LeaseRevokedException, LeaseExpiredException {
    private static final long serialVersionUID = 1L;

    private final long leaseId;

    LeaseEndedException(long leaseId, String message) {
        super(message);
        this.leaseId = leaseId;
    }

    /** The ended lease's id ({@link RemoteSegment#leaseId()}). */
    public long leaseId() {
        return leaseId;
    }
}
