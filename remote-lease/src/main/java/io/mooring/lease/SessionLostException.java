package io.mooring.lease;

import io.mooring.lifecycle.MooringException;

/**
 * The session to the peer broke (its process, the TCP connection or the QP), or was closed, and nothing more goes
 * through it. (A control request the peer does not answer within the request timeout is a
 * {@link io.mooring.lifecycle.MooringTimeoutException}: the session lives on. It was this exception until #29.)
 */
public final class SessionLostException extends MooringException {
    private static final long serialVersionUID = 1L;

    public SessionLostException(String message) {
        super(message);
    }
}
