package io.mooring.lease;

import io.mooring.lifecycle.MooringException;

/** A lease could not be granted or renewed: a limit, a bad argument or a closed manager, named in the message. */
public final class LeaseRefusedException extends MooringException {
    private static final long serialVersionUID = 1L;

    private final int code;

    LeaseRefusedException(int code, String message) {
        super(message);
        this.code = code;
    }

    /** The protocol error code sent to a remote holder ({@link ErrorCodes}). */
    public int code() {
        return code;
    }
}
