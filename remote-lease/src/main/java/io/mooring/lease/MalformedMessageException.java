package io.mooring.lease;

import io.mooring.lifecycle.MooringException;

/**
 * A control message that does not decode; carries the request id when the header was readable (else 0).
 * Without a stack trace: the reason says everything, and a peer sending garbage must not cost us stack walks.
 */
final class MalformedMessageException extends MooringException {
    private static final long serialVersionUID = 1L;

    private final long requestId;

    MalformedMessageException(long requestId, String reason) {
        super(reason, null, false, false);
        this.requestId = requestId;
    }

    long requestId() {
        return requestId;
    }
}
