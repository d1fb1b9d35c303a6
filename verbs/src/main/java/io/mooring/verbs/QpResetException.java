package io.mooring.verbs;

/**
 * A work request of a queue pair that was {@linkplain QueuePair#reset() reset} before the request completed: the NIC
 * forgot it, so no completion will come, and its memory is the caller's again. Post it again once the queue pair is
 * connected again.
 */
public final class QpResetException extends VerbsException {
    private static final long serialVersionUID = 1L;

    /** @param qp the queue pair that was reset */
    public QpResetException(String qp) {
        super("work request", 0, qp, "the queue pair was reset before the request completed (the NIC forgets what"
                + " it had queued)");
    }
}
