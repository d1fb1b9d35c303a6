package io.mooring.lease;

import io.mooring.lifecycle.MooringException;

/**
 * A message could not be sent or received within the session's flow control: too many sends wait for the peer's
 * credit, too many receives wait for a message, or the peer sent past the credits it was given (which ends the
 * session).
 */
public final class FlowControlException extends MooringException {
    private static final long serialVersionUID = 1L;

    public FlowControlException(String message) {
        super(message);
    }
}
