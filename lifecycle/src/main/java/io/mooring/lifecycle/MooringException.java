package io.mooring.lifecycle;

/**
 * The root of every exception Mooring throws for a failure of its own: unchecked, so a blocking call and the future
 * of its {@code Async} twin fail with the same type (the future's {@code join()} wraps it in a
 * {@code CompletionException}, whose cause it is). A caller branches on the typed subclasses — a resource closed or
 * busy, a verb's errno, a peer lost, a time limit passed ({@link MooringTimeoutException}) — and catches this class
 * to handle all of them at once. A bad argument is the JDK's {@link IllegalArgumentException} or
 * {@link NullPointerException}, never a subclass of this: it is the caller's bug, not a condition to handle.
 */
public class MooringException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public MooringException(String message) {
        super(message);
    }

    public MooringException(String message, Throwable cause) {
        super(message, cause);
    }

    /** For failures a peer can cause at will: without a stack trace they cost no stack walk (as in the JDK). */
    protected MooringException(String message, Throwable cause, boolean enableSuppression, boolean writableStackTrace) {
        super(message, cause, enableSuppression, writableStackTrace);
    }
}
