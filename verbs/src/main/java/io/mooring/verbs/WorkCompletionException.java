package io.mooring.verbs;

/** A work request completed with an error status; the completion is attached. */
public final class WorkCompletionException extends VerbsException {
    private static final long serialVersionUID = 1L;

    private final transient WorkCompletion completion;

    public WorkCompletionException(String qp, WorkCompletion completion) {
        super("work request " + completion.wrId(), 0, qp, completion.status() + hintFor(completion.status()));
        this.completion = completion;
    }

    /** The failed completion. */
    public WorkCompletion completion() {
        return completion;
    }

    /** Its status. */
    public WcStatus status() {
        return completion.status();
    }

    private static String hintFor(WcStatus status) {
        return switch (status) {
            case REM_ACCESS_ERR -> " (the peer refused the access: wrong or invalidated rkey, range outside the"
                    + " region or window, or a missing right); the QP is now in ERROR";
            case LOC_PROT_ERR -> " (a local buffer is not covered by a valid lkey with the rights the operation"
                    + " needs); the QP is now in ERROR";
            case LOC_LEN_ERR -> " (the message is longer than the receive buffer)";
            case RNR_RETRY_EXC_ERR -> " (the peer had no receive posted for our SEND after rnr_retry attempts)";
            case RETRY_EXC_ERR -> " (the peer did not answer: it is gone, or its QP is not connected to ours)";
            case WR_FLUSH_ERR -> " (flushed: the QP was in ERROR, so the request never ran)";
            case REM_INV_REQ_ERR -> " (the peer rejected the request as invalid, e.g. a misaligned atomic or a"
                    + " SEND longer than its receive buffer)";
            case MW_BIND_ERR -> " (the memory window bind or invalidate was not allowed)";
            default -> "";
        };
    }
}
