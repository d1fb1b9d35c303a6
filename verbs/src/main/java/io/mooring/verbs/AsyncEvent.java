package io.mooring.verbs;

/**
 * An asynchronous event of a device context ({@code struct ibv_async_event}): something the device did on its own
 * that no work completion reports, such as a completion queue overrun.
 *
 * @param type    what happened
 * @param element the object it happened to: a completion queue or queue pair as its {@code toString()} names it,
 *                {@code qpn N} for a QP not opened through Mooring, {@code port N}, or the device's name
 */
public record AsyncEvent(Type type, String element) {
    /** {@code enum ibv_event_type}, in its order: {@link #ordinal()} is the verbs code. */
    public enum Type {
        /** A completion queue overran: a completion was lost, the CQ is unusable, QPs on it go to ERROR. */
        CQ_ERR,
        QP_FATAL,
        QP_REQ_ERR,
        QP_ACCESS_ERR,
        COMM_EST,
        SQ_DRAINED,
        PATH_MIG,
        PATH_MIG_ERR,
        DEVICE_FATAL,
        PORT_ACTIVE,
        PORT_ERR,
        LID_CHANGE,
        PKEY_CHANGE,
        SM_CHANGE,
        SRQ_ERR,
        SRQ_LIMIT_REACHED,
        QP_LAST_WQE_REACHED,
        CLIENT_REREGISTER,
        GID_CHANGE,
        WQ_FATAL;

        private static final Type[] ALL = values();

        /** The type of verbs code {@code code}, or null for one this enum does not know. */
        static Type of(int code) {
            return code >= 0 && code < ALL.length ? ALL[code] : null;
        }

        boolean isQpEvent() {
            return switch (this) {
                case QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR, COMM_EST, SQ_DRAINED, PATH_MIG, PATH_MIG_ERR,
                     QP_LAST_WQE_REACHED -> true;
                default -> false;
            };
        }

        boolean isPortEvent() {
            return switch (this) {
                case PORT_ACTIVE, PORT_ERR, LID_CHANGE, PKEY_CHANGE, SM_CHANGE, CLIENT_REREGISTER, GID_CHANGE -> true;
                default -> false;
            };
        }
    }
}
