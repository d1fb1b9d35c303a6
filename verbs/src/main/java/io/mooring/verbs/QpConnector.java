package io.mooring.verbs;

import io.mooring.verbs.spi.QpOps;
import io.mooring.verbs.values.Gid;
import io.mooring.verbs.values.Mtu;
import io.mooring.verbs.values.PortAttributes;
import io.mooring.verbs.values.QpAttributes;
import io.mooring.verbs.values.QpState;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;

/**
 * A queue pair's state transitions ({@code ibv_modify_qp}): what each one sets, from the connection's options and
 * the peer's {@link QpInfo}, and the QP state machine, checked here only — each transition against the device's
 * current state, under the QP's queue locks so that every post sees the state before or after it
 * ({@link QpQueues#requireAccepts}). Keeps the PSN the next connection sends from.
 */
final class QpConnector {
    private final QueuePair qp;
    private final QpOps ops;
    private final QpQueues queues;
    private final DeviceContext context;
    private final Object modifyLock = new Object();
    private volatile int psn = freshPsn(-1); // the next connection's send PSN, unless one is chosen; new at reset

    QpConnector(QueuePair qp, QpOps ops, QpQueues queues, DeviceContext context) {
        this.qp = qp;
        this.ops = ops;
        this.queues = queues;
        this.context = context;
    }

    QpInfo info(ConnectOptions options) {
        PortAttributes port = context.port(options.port());
        return new QpInfo(ops.qpNumber(), sendPsn(options), context.gid(options.port(), options.gidIndex()),
                port.lid(), port.activeMtu(), ops.token());
    }

    /** The PSN this QP sends from when connected with {@code options}: the chosen one, else the one drawn at reset. */
    private int sendPsn(ConnectOptions options) {
        return options.sendPsn().orElse(psn);
    }

    void init(ConnectOptions options) {
        options.requireSupportedBy(context);
        modify(QpAttributes.builder().state(QpState.INIT).port(options.port()).pkeyIndex(options.pkeyIndex())
                .access(options.access()).build());
    }

    void readyToReceive(QpInfo remote, ConnectOptions options) {
        options.requireSupportedBy(context);
        PortAttributes port = context.port(options.port());
        Mtu path = remote.mtu().bytes() < port.activeMtu().bytes() ? remote.mtu() : port.activeMtu();
        Gid source = context.gid(options.port(), options.gidIndex());
        int gidIndex = options.gidIndex() >= 0 ? options.gidIndex() : port.gids().indexOf(source);
        modify(QpAttributes.builder().state(QpState.RTR).pathMtu(path).destQpNumber(remote.qpn())
                .receivePsn(remote.psn()).maxDestRdAtomic(options.maxDestRdAtomic())
                .minRnrTimerCode(options.minRnrTimerCode())
                // RoCE v2 needs a global route: the peer's GID as destination, ours by table index as source
                .destGid(remote.gid()).destLid(remote.lid()).destToken(remote.token())
                .sourceGidIndex(Math.max(gidIndex, 0)).hopLimit(options.hopLimit())
                .trafficClass(options.trafficClass()).serviceLevel(options.serviceLevel()).build());
    }

    /** From RTR the connection's send attributes; from SQD or RTS none (see {@link QueuePair#readyToSend}). */
    void readyToSend(ConnectOptions options) {
        options.requireSupportedBy(context);
        var toRts = QpAttributes.builder().state(QpState.RTS);
        modify(now -> now != QpState.RTR ? toRts.build() : toRts.sendPsn(sendPsn(options))
                .ackTimeoutCode(options.ackTimeoutCode()).retryCount(options.retryCount()).rnrRetry(options.rnrRetry())
                .maxRdAtomic(options.maxRdAtomic()).build());
    }

    /** Any state → RESET, a new PSN drawn, and the outstanding requests discarded (the NIC forgot them). */
    void reset() {
        synchronized (modifyLock) {
            modify(QpState.RESET);
            psn = freshPsn(psn);
        }
        var why = new QpResetException(qp.toString());
        queues.send.discardAll(why, false);
        if (!queues.shared) queues.receive.discardAll(why, false);
    }

    QpAttributes query() {
        qp.resource.checkOpen();
        return ops.query();
    }

    void modify(QpAttributes a) {
        modify(now -> a);
    }

    /** Moves the QP to {@code state}, setting nothing else. */
    void modify(QpState state) {
        modify(QpAttributes.builder().state(state).build());
    }

    /** {@link #modify(QpAttributes)} with the attributes that the transition from the current state takes. */
    private void modify(Function<QpState, QpAttributes> attributesFrom) {
        qp.resource.checkOpen();
        synchronized (modifyLock) {
            queues.lock();
            try {
                QpState now = ops.state();
                QpAttributes a = attributesFrom.apply(now);
                if (!now.canMoveTo(a.state())) {
                    throw new QpStateException("ibv_modify_qp", qp.toString(), now, "moving to " + a.state());
                }
                ops.modify(a);
                queues.known = a.state();
                queues.errorSeen = false;
            } finally {
                queues.unlock();
            }
        }
    }

    /** A random 24-bit PSN other than {@code previous}. */
    private static int freshPsn(int previous) {
        int next;
        do {
            next = ThreadLocalRandom.current().nextInt(QpAttributes.MAX_PSN + 1);
        } while (next == previous);
        return next;
    }
}
