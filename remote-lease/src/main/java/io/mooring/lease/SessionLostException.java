package io.mooring.lease;

/** The session to the peer broke (its process, the TCP connection or the QP); nothing more goes through it. */
public final class SessionLostException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public SessionLostException(String message) {
        super(message);
    }
}
