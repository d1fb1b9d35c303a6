package io.mooring.lease;

/** Why a lease ended. Each has a fixed number on the wire (a REVOKE carries it), never its position here. */
public enum EndReason {
    /** The holder released it (or the owner closed it). */
    RELEASED(0),
    /** Its duration (plus the owner's grace margin) passed without a renewal. */
    EXPIRED(1),
    /** The completion stage given to {@code grant} completed. */
    DONE(2),
    /** The session to the peer broke (process gone, TCP or QP failure). */
    SESSION_LOST(3),
    /** The lease manager was closed. */
    OWNER_CLOSED(4);

    private final int code;

    EndReason(int code) {
        this.code = code;
    }

    /** Its number in a REVOKE. */
    int code() {
        return code;
    }

    /** The reason numbered {@code code}, or null. */
    static EndReason of(int code) {
        for (EndReason r : values()) if (r.code == code) return r;
        return null;
    }
}
