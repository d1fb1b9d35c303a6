package io.mooring.lease;

import java.time.Duration;

/**
 * The peer's endpoint refused this session at its handshake, and said why (instead of hanging up): the connecting
 * side's {@link RdmaEndpoint#connectAsync} future fails with this. Its {@link #reason()} tells a caller what to do:
 * wait {@link #retryAfter()} after {@link Reason#BARRED}, back off after the others, which are limits of the peer's.
 */
public final class SessionRefusedException extends ConnectFailedException {
    private static final long serialVersionUID = 1L;

    /** Why an endpoint refuses a session; each has a fixed wire code. */
    public enum Reason {
        /** The endpoint serves {@code maxSessions} sessions already. */
        ENDPOINT_FULL(1),
        /** This peer (its address prefix) holds {@code maxSessionsPerPeer} sessions already. */
        PEER_FULL(2),
        /** A session of this peer's was lost recently: it waits {@link #retryAfter()} before the next. */
        BARRED(3),
        /** Too many handshakes at once: this peer's ({@code maxHandshakesPerPeer}), or the endpoint's. */
        HANDSHAKE_LIMIT(4),
        /** The endpoint or its listener is closing. */
        CLOSING(5);

        final int code;

        Reason(int code) {
            this.code = code;
        }

        static Reason of(int code) {
            for (Reason r : values()) if (r.code == code) return r;
            return null;
        }
    }

    private final Reason reason;
    private final Duration retryAfter;

    SessionRefusedException(Reason reason, Duration retryAfter, String message) {
        super(message, null);
        this.reason = reason;
        this.retryAfter = retryAfter;
    }

    /** Why the peer refused. */
    public Reason reason() {
        return reason;
    }

    /** How long the peer asks this side to wait before it tries again (zero if it named no time). */
    public Duration retryAfter() {
        return retryAfter;
    }
}
