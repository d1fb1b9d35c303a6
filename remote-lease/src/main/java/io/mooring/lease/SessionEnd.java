package io.mooring.lease;

import java.util.Objects;

/**
 * How a session ended, as {@link RdmaSession#closed()} reports it: who ended it ({@link #how()}) and the words that say
 * why ({@link #reason()}, which names the peer and, for a loss, what broke).
 *
 * @param how    closed by this side, ended by the peer's goodbye, or lost to a failure
 * @param reason the whole sentence, as logged
 */
public record SessionEnd(How how, String reason) {
    /** Who ended a session (the glossary's closed / ended / lost). */
    public enum How {
        /** This side closed it ({@link RdmaSession#close()}). */
        CLOSED,
        /** The peer closed it with a goodbye: what it sent before is still received. */
        ENDED,
        /** A failure ended it — a broken connection, an end without goodbye, a QP in ERROR, a protocol violation — and
         * the peer waits a while before its next session is accepted. */
        LOST
    }

    public SessionEnd {
        Objects.requireNonNull(how, "how");
        Objects.requireNonNull(reason, "reason");
    }

    @Override
    public String toString() {
        return reason;
    }
}
