package io.mooring.verbs;

import io.mooring.verbs.spi.QpOps;

/**
 * What a queue pair shares with the completion routers of its context, outside its handle (so polling never keeps a
 * QP reachable): its send queue, its receive queue (a shared receive queue's slots, for a QP on one) and its state as
 * the public layer last set it. Every post checks the state here, under its queue's lock, and every modify changes it
 * holding the QP's queue locks — the one place the QP state machine is enforced; providers do not check it again.
 */
final class QpQueues {
    final InFlight send;
    final RequestSlots receive;
    /** Whether {@link #receive} belongs to a shared receive queue (a reset or destroy of the QP leaves it alone). */
    final boolean shared;
    /** The routers of its send and receive CQs: a CQ that can no longer be polled fails its requests. */
    final CompletionRouter sendCq;
    final CompletionRouter recvCq;
    /** The provider's QP, set before it enters its context's {@link QpTable} (whose volatile write publishes it). */
    QpOps ops;
    /** The state the last modify set; the device may since have moved the QP to ERROR on its own. */
    volatile QpState known = QpState.RESET;
    /** An error completion was polled since the last modify: the device may have moved the QP to ERROR. */
    volatile boolean errorSeen;

    QpQueues(InFlight send, RequestSlots receive, boolean shared, CompletionRouter sendCq, CompletionRouter recvCq) {
        this.send = send;
        this.receive = receive;
        this.shared = shared;
        this.sendCq = sendCq;
        this.recvCq = recvCq;
    }

    /** The receive queue as the QP's own ring (caller knows it is not shared). */
    InFlight ownReceive() {
        return (InFlight) receive;
    }
}
