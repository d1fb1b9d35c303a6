package io.mooring.verbs.values;

/** Queue pair states ({@code enum ibv_qp_state}); the ordinal is the verbs code. */
public enum QpState {
    RESET, INIT, RTR, RTS, SQD, SQE, ERROR;

    private static final QpState[] BY_CODE = values();

    public int code() {
        return ordinal();
    }

    public static QpState of(int code) {
        if (code < 0 || code >= BY_CODE.length) throw new IllegalArgumentException("no QP state has code " + code);
        return BY_CODE[code];
    }

    /**
     * Whether a reliable-connected QP may move from this state to {@code next}, as a NIC allows: forward along
     * RESET→INIT→RTR→RTS, RTS⇄SQD, INIT→INIT and RTS→RTS (attribute changes), and from anywhere to RESET or ERROR.
     */
    public boolean canMoveTo(QpState next) {
        if (next == RESET || next == ERROR) return true;
        return switch (this) {
            case RESET -> next == INIT;
            case INIT -> next == INIT || next == RTR;
            case RTR -> next == RTS;
            case RTS -> next == RTS || next == SQD;
            case SQD -> next == RTS || next == SQD;
            case SQE -> next == RTS;
            case ERROR -> false;
        };
    }

    /** Whether send work requests may be posted (ERROR accepts them and flushes them). */
    public boolean acceptsSends() {
        return this == RTS || this == SQD || this == ERROR;
    }

    /** Whether receive work requests may be posted (everything but RESET). */
    public boolean acceptsReceives() {
        return this != RESET;
    }
}
