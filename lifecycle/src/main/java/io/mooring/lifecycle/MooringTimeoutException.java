package io.mooring.lifecycle;

/**
 * A time limit the caller gave (or a configured one, named in the message) passed before the operation completed.
 * The one way Mooring reports a timeout, from a blocking call as from a future: never the checked
 * {@link java.util.concurrent.TimeoutException}. What the timeout leaves behind (nothing, or a session that lives on)
 * is said by the method that throws it.
 */
public class MooringTimeoutException extends MooringException {
    private static final long serialVersionUID = 1L;

    public MooringTimeoutException(String message) {
        super(message);
    }

    public MooringTimeoutException(String message, Throwable cause) {
        super(message, cause);
    }
}
