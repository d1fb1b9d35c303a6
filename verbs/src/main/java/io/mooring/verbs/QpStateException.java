package io.mooring.verbs;

import io.mooring.verbs.values.QpState;

/** An operation or transition the queue pair's current state does not allow (EINVAL from the NIC). */
public final class QpStateException extends VerbsException {
    private static final long serialVersionUID = 1L;

    private final QpState state;

    public QpStateException(String verb, String qp, QpState state, String what) {
        super(verb, Errno.EINVAL.number(), qp, what + " is not allowed in state " + state);
        this.state = state;
    }

    /** The state the queue pair was in. */
    public QpState state() {
        return state;
    }
}
