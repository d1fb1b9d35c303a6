package io.mooring.lease;

/** The codes of ERROR messages. */
final class ErrorCodes {
    static final int MALFORMED = 1;
    static final int UNSUPPORTED_VERSION = 2;
    static final int UNKNOWN_LEASE = 3;
    static final int LIMIT_EXCEEDED = 4;
    static final int INVALID_REQUEST = 5;
    static final int OUT_OF_MEMORY = 6;
    static final int SHUTTING_DOWN = 7;

    private ErrorCodes() {}
}
