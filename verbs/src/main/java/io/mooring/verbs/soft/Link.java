package io.mooring.verbs.soft;

/** How a requester QP reaches its responder QP. */
interface Link {
    /**
     * Delivers {@code request} and waits for the answer.
     *
     * @return the answer, or {@link Wire.Response#DROPPED} if none came within {@code timeoutNanos} (the
     *         requester then retries as after a transport timeout)
     */
    Wire.Response exchange(Wire.Request request, long timeoutNanos) throws InterruptedException;

    void close();
}
