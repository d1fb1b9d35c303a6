package io.mooring.verbs;

import io.mooring.lifecycle.MooringException;
import java.io.IOException;

/**
 * A {@link Bootstrap} exchange or barrier failed, its {@link IOException} the cause: the peer closed the connection
 * early ({@link java.io.EOFException}), sent what this side cannot read ({@link java.net.ProtocolException}, e.g. a
 * peer of another version), or the connection broke. Nothing was connected; close the socket. (A read past the
 * socket's timeout is a {@link io.mooring.lifecycle.MooringTimeoutException} instead, as every timeout is.)
 */
public final class BootstrapFailedException extends MooringException {
    private static final long serialVersionUID = 1L;

    public BootstrapFailedException(String message, IOException cause) {
        super(message, cause);
    }

    /** What failed underneath: an {@code EOFException}, a {@code ProtocolException} or the connection's own. */
    @Override
    public synchronized IOException getCause() {
        return (IOException) super.getCause();
    }
}
