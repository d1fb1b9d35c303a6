package io.mooring.verbs.values;

/** Memory window types ({@code enum ibv_mw_type}). */
public enum MwType {
    /** Bound with the bind verb; keeps its rkey across binds unless rebound; not tied to a QP. */
    TYPE_1(1),
    /** Bound with a BIND_MW work request on a QP, choosing a new rkey per bind; invalidated with LOCAL_INV. */
    TYPE_2(2);

    private final int code;

    MwType(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }
}
