package io.mooring.verbs.values;

/**
 * The groups of queue pair attributes one {@code ibv_modify_qp} can change ({@code enum ibv_qp_attr_mask}); a
 * {@link QpAttributes} derives its mask from the fields that were set. Only what a reliable-connected QP uses.
 */
public enum QpAttribute {
    /** {@link QpAttributes#state}. */
    STATE(1),
    /** {@link QpAttributes#access}. */
    ACCESS_FLAGS(1 << 3),
    /** {@link QpAttributes#pkeyIndex}. */
    PKEY_INDEX(1 << 4),
    /** {@link QpAttributes#port}. */
    PORT(1 << 5),
    /**
     * The primary path's address vector ({@code ah_attr}), set as a whole: {@link QpAttributes#destGid},
     * {@link QpAttributes#destLid}, {@link QpAttributes#destToken}, {@link QpAttributes#sourceGidIndex},
     * {@link QpAttributes#hopLimit}, {@link QpAttributes#trafficClass}, {@link QpAttributes#serviceLevel}.
     */
    ADDRESS_VECTOR(1 << 7),
    /** {@link QpAttributes#pathMtu}. */
    PATH_MTU(1 << 8),
    /** {@link QpAttributes#ackTimeoutCode}. */
    TIMEOUT(1 << 9),
    /** {@link QpAttributes#retryCount}. */
    RETRY_COUNT(1 << 10),
    /** {@link QpAttributes#rnrRetry}. */
    RNR_RETRY(1 << 11),
    /** {@link QpAttributes#receivePsn}. */
    RQ_PSN(1 << 12),
    /** {@link QpAttributes#maxRdAtomic}. */
    MAX_RD_ATOMIC(1 << 13),
    /** {@link QpAttributes#minRnrTimerCode}. */
    MIN_RNR_TIMER(1 << 15),
    /** {@link QpAttributes#sendPsn}. */
    SQ_PSN(1 << 16),
    /** {@link QpAttributes#maxDestRdAtomic}. */
    MAX_DEST_RD_ATOMIC(1 << 17),
    /** {@link QpAttributes#destQpNumber}. */
    DEST_QPN(1 << 20);

    private final int bit;

    QpAttribute(int bit) {
        this.bit = bit;
    }

    /** The verbs bit ({@code IBV_QP_*}). */
    public int bit() {
        return bit;
    }
}
