package io.mooring.lease;

import io.mooring.lifecycle.MooringException;

/**
 * A session could not be set up: the peer could not be reached, hung up or spoke another protocol during the
 * handshake (the cause is the {@link java.io.IOException} that said so), this endpoint was closed or full, or — the
 * subclass a caller branches on — the peer {@linkplain SessionRefusedException refused} it and said why. The future of
 * {@link RdmaEndpoint#connectAsync} fails with this; a handshake that runs past its timeout fails with a
 * {@link io.mooring.lifecycle.MooringTimeoutException} instead, as every timeout does.
 */
public sealed class ConnectFailedException extends MooringException permits SessionRefusedException {
    private static final long serialVersionUID = 1L;

    ConnectFailedException(String message, Throwable cause) {
        super(message, cause);
    }
}
