package io.mooring.verbs.spi;

import io.mooring.verbs.Gid;
import io.mooring.verbs.Mtu;
import io.mooring.verbs.QpInfo;
import io.mooring.verbs.QpState;

/**
 * One {@code ibv_modify_qp} call: the target state and the attributes that transition needs (the rest are
 * ignored). The public API has already checked that the transition is allowed from the current state.
 *
 * @param target          the state to move to
 * @param port            INIT: port number
 * @param access          INIT: what the peer may do through this QP ({@code IBV_ACCESS_REMOTE_*} mask)
 * @param remote          RTR: the peer's QP number, PSN, GID and LID
 * @param sourceGid       RTR: the local GID to send from
 * @param gidIndex        RTR: its index in the port's GID table
 * @param pathMtu         RTR: the path MTU
 * @param minRnrTimer     RTR: RNR NAK timer code
 * @param maxDestRdAtomic RTR: incoming READ/atomic depth
 * @param sendPsn         RTS: first PSN of our send queue
 * @param timeout         RTS: ACK timeout code
 * @param retryCount      RTS: transport retries
 * @param rnrRetry        RTS: RNR retries (7 = forever)
 * @param maxRdAtomic     RTS: outgoing READ/atomic depth
 */
public record QpTransition(QpState target, int port, int access, QpInfo remote, Gid sourceGid, int gidIndex,
                           Mtu pathMtu, int minRnrTimer, int maxDestRdAtomic, int sendPsn, int timeout,
                           int retryCount, int rnrRetry, int maxRdAtomic) {

    /** A transition that needs no attributes (to RESET, ERROR or SQD). */
    public static QpTransition to(QpState target) {
        return new QpTransition(target, 0, 0, null, null, 0, null, 0, 0, 0, 0, 0, 0, 0);
    }
}
