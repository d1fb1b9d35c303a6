package io.mooring.lease;

import io.mooring.lifecycle.MooringException;

/**
 * The session to the peer broke (its process, the TCP connection or the QP), and nothing more goes through it — or a
 * control request ({@code requestRemote}, {@code renew}, a release) got no answer within the request timeout: then the
 * session itself may still be up ({@link RdmaSession#lostReason()} is null), with a peer too slow to be of use; close
 * it, or retry if the peer is known to be only busy.
 */
public final class SessionLostException extends MooringException {
    private static final long serialVersionUID = 1L;

    public SessionLostException(String message) {
        super(message);
    }
}
