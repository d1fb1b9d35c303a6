package io.mooring.verbs;

/** How a work request ended ({@code enum ibv_wc_status}); the ordinal is the verbs code. */
public enum WcStatus {
    SUCCESS, LOC_LEN_ERR, LOC_QP_OP_ERR, LOC_EEC_OP_ERR, LOC_PROT_ERR, WR_FLUSH_ERR, MW_BIND_ERR, BAD_RESP_ERR,
    LOC_ACCESS_ERR, REM_INV_REQ_ERR, REM_ACCESS_ERR, REM_OP_ERR, RETRY_EXC_ERR, RNR_RETRY_EXC_ERR,
    LOC_RDD_VIOL_ERR, REM_INV_RD_REQ_ERR, REM_ABORT_ERR, INV_EECN_ERR, INV_EEC_STATE_ERR, FATAL_ERR,
    RESP_TIMEOUT_ERR, GENERAL_ERR;

    private static final WcStatus[] BY_CODE = values();

    public int code() {
        return ordinal();
    }

    /** The status for a verbs code; codes this enum does not know map to GENERAL_ERR. */
    public static WcStatus of(int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : GENERAL_ERR;
    }
}
