package io.mooring.lease;

/** Why a lease ended. */
public enum EndReason {
    /** The requester released it (or the owner closed it). */
    RELEASED,
    /** Its duration (plus the owner's grace margin) passed without a renewal. */
    EXPIRED,
    /** The completion stage given to {@code expose} completed. */
    DONE,
    /** The session to the peer broke (process gone, TCP or QP failure). */
    SESSION_LOST,
    /** The lease manager was closed. */
    OWNER_CLOSED
}
