package io.mooring.verbs;

/**
 * A post found its queue full (ENOMEM from {@code ibv_post_send}/{@code ibv_post_recv}). Posting never blocks:
 * poll completions (a signaled send frees itself and every unsignaled send before it) and post again.
 */
public final class QueueFullException extends VerbsException {
    private static final long serialVersionUID = 1L;

    public QueueFullException(String verb, String qp, String queue, int depth) {
        super(verb, Errno.ENOMEM.number(), qp, "the " + queue + " queue holds " + depth
                + " outstanding work requests; poll completions before posting more (a signaled send also"
                + " retires the unsignaled sends before it)");
    }
}
