package io.mooring.verbs.soft;

import io.mooring.verbs.QpInfo;
import io.mooring.verbs.WcFlag;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.Opcode;
import io.mooring.verbs.values.QpState;
import io.mooring.verbs.values.WcOpcode;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * The responder of a soft QP: executes its peer's requests (on the peer's requester thread in one device, on the TCP
 * reader thread across devices), one at a time and in PSN order. A request before the expected PSN is a
 * retransmission whose answer was lost: it is acknowledged (a READ served again, an atomic's result replayed), never
 * executed twice; one after it is a gap, dropped for the requester to retransmit in order. An access it rejects
 * moves the QP to ERROR and touches nothing; a SEND that finds no receive is answered with an RNR NAK.
 */
final class Responder {
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private final SoftQp qp;
    private final ReentrantLock responding = new ReentrantLock(); // one incoming request at a time
    private final RecvWork received = new RecvWork();            // guarded by responding: the receive being filled
    private volatile int expectedPsn; // written under responding: the PSN of the next new incoming request
    private final AtomicReplay atomics = new AtomicReplay(); // guarded by responding

    Responder(SoftQp qp) {
        this.qp = qp;
    }

    /** The PSN the next new request must carry. */
    int expectedPsn() {
        return expectedPsn;
    }

    /** Expects {@code psn} next, as a modify to RTR sets it; what a previous connection left is forgotten. */
    void expect(int psn) {
        responding.lock();
        try {
            expectedPsn = psn;
            atomics.forget();
        } finally {
            responding.unlock();
        }
    }

    /** Waits until an incoming request in progress has finished (the QP is being destroyed). */
    void awaitIdle() {
        responding.lock();
        responding.unlock();
    }

    /**
     * Executes one request of the peer's requester against this QP's memory and receive queue. {@code via} is the
     * TCP connection it came on (null within one device): only the one this QP uses now may run requests. One that
     * a reset closed or a newer one replaced can still hand its reader a request arriving as it closes; run, it
     * would act on this QP (an access error moves it to ERROR) while its answer goes nowhere.
     */
    Wire.Response respond(Wire.Request r, Link via) {
        responding.lock();
        try {
            QpState s = qp.state;
            QpInfo peer = qp.remote();
            if (qp.destroyed || s == QpState.RESET || s == QpState.INIT || s == QpState.ERROR
                    || peer == null || peer.qpn() != r.srcQpn() || (via != null && !qp.link.carries(via))) {
                return Wire.Response.DROPPED; // not connected to that peer: as if the packet never arrived
            }
            FaultInjector f = qp.faults;
            if (f != null && f.severs()) return Wire.Response.DROPPED;
            Opcode op = Opcode.of(r.opcode());
            int distance = Wire.psnDistance(r.psn(), expectedPsn);
            if (distance > 0) return Wire.Response.DROPPED; // a gap: the requester retransmits in order
            if (distance < 0) return duplicate(r, op);
            Wire.Response answer = switch (op) {
                case SEND, SEND_WITH_IMM -> receive(r, op);
                case RDMA_WRITE, RDMA_WRITE_WITH_IMM -> write(r, op);
                case RDMA_READ -> remoteRead(r);
                case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD -> remoteAtomic(r, op);
                default -> {
                    qp.enterError();
                    yield Wire.Response.INVALID_REQUEST;
                }
            };
            if (answer.kind() == Wire.Kind.ACK) {
                if (op.isAtomic()) atomics.executed(r.psn(), answer.atomicOriginal(), qp.destReadDepth);
                expectedPsn = Wire.nextPsn(expectedPsn);
            }
            return answer;
        } finally {
            responding.unlock();
        }
    }

    /**
     * A retransmission of a request already executed (its answer was lost or late): a READ is served again,
     * an atomic's original value is replayed (a requester with several in flight may resend them all), anything else
     * is acknowledged — never executed twice. An atomic too old to be remembered is dropped: the requester gave up on
     * it long ago.
     */
    private Wire.Response duplicate(Wire.Request r, Opcode op) {
        if (op == Opcode.RDMA_READ) return remoteRead(r);
        return op.isAtomic() ? atomics.replay(r.psn()) : Wire.Response.ACK;
    }

    /**
     * Moves the next receive — of the shared receive queue, if the QP has one — into {@link #received}; null if
     * none is posted (or injected faults stall the receives). Caller holds {@link #responding}.
     */
    private RecvWork takeReceive() {
        FaultInjector f = qp.faults;
        if (f != null && f.stallsReceive()) return null;
        if (qp.srq != null) return qp.srq.take(received) ? received : null;
        qp.lock.lock();
        try {
            return qp.recvQueue.take(received) ? received : null;
        } finally {
            qp.lock.unlock();
        }
    }

    /** Puts back a receive that a failed request took, so that entering ERROR flushes it in order. */
    private void returnReceive(RecvWork rw) {
        if (qp.srq != null) {
            qp.srq.putBack(rw);
            return;
        }
        qp.lock.lock();
        try {
            qp.recvQueue.putBack(rw);
        } finally {
            qp.lock.unlock();
        }
    }

    private Wire.Response receive(Wire.Request r, Opcode op) {
        RecvWork rw = takeReceive();
        if (rw == null) return Wire.Response.rnr(qp.minRnrTimer);
        if (r.length() > rw.capacity()) {
            qp.fail(qp.recvCq, rw.wrId, WcOpcode.RECV.code(), WcStatus.LOC_LEN_ERR);
            return Wire.Response.INVALID_REQUEST;
        }
        if (!rw.sges.scatter(r.payload(), r.length(), qp.device, rw.pd)) {
            qp.fail(qp.recvCq, rw.wrId, WcOpcode.RECV.code(), WcStatus.LOC_PROT_ERR);
            return Wire.Response.OPERATION_ERROR;
        }
        boolean imm = op == Opcode.SEND_WITH_IMM;
        boolean pushed = qp.recvCq.push(rw.wrId, WcStatus.SUCCESS.code(), WcOpcode.RECV.code(), r.length(),
                imm ? r.immediate() : 0, imm ? WcFlag.WITH_IMM.bit() : 0, qp.qpNumber());
        return pushed ? Wire.Response.ACK : completionLost();
    }

    private Wire.Response write(Wire.Request r, Opcode op) {
        RecvWork rw = null;
        if (op == Opcode.RDMA_WRITE_WITH_IMM && (rw = takeReceive()) == null) return Wire.Response.rnr(qp.minRnrTimer);
        boolean done = remoteWrite(r);
        if (!done) {
            if (rw != null) returnReceive(rw);
            return accessError();
        }
        if (rw != null && !qp.recvCq.push(rw.wrId, WcStatus.SUCCESS.code(), WcOpcode.RECV_RDMA_WITH_IMM.code(),
                r.length(), r.immediate(), WcFlag.WITH_IMM.bit(), qp.qpNumber())) {
            return completionLost();
        }
        return Wire.Response.ACK;
    }

    /** Copies the bytes read into the request's buffer; from a region without a lambda, the data path's case. */
    private Wire.Response remoteRead(Wire.Request r) {
        int right = Access.REMOTE_READ.bit();
        if (r.length() == 0) return (qp.access & right) != 0 ? Wire.Response.ACK : accessError(); // see remoteWrite
        byte[] into = r.payload();
        boolean done = (qp.access & right) != 0 && qp.device.keys.region(r.rkey()) instanceof SoftMr mr
                ? reaches(mr, r.rkey(), r.remoteAddress(), r.length(), right)
                        && mr.copyOut(r.remoteAddress(), into, 0, r.length())
                : remoteAccess(r.rkey(), r.remoteAddress(), r.length(), right,
                        src -> MemorySegment.copy(src, ValueLayout.JAVA_BYTE, 0, into, 0, r.length()));
        return done ? Wire.Response.ACK : accessError();
    }

    private Wire.Response remoteAtomic(Wire.Request r, Opcode op) {
        if ((r.remoteAddress() & 7) != 0) { // atomics need natural alignment: an invalid request, not an access error
            qp.enterError();
            return Wire.Response.INVALID_REQUEST;
        }
        long[] original = new long[1];
        boolean done = remoteAccess(r.rkey(), r.remoteAddress(), Long.BYTES, Access.REMOTE_ATOMIC.bit(),
                target -> original[0] = op == Opcode.ATOMIC_CMP_AND_SWP
                        ? (long) LONG.compareAndExchange(target, 0L, r.compareAdd(), r.swap())
                        : (long) LONG.getAndAdd(target, 0L, r.compareAdd()));
        return done ? Wire.Response.atomic(original[0]) : accessError();
    }

    /**
     * The receive CQ overran, so the request's completion is lost: the QP moves to ERROR without acknowledging it
     * (rxe's responder, class G), and the peer's retries meet silence until RETRY_EXC_ERR.
     */
    private Wire.Response completionLost() {
        qp.completionLost();
        return Wire.Response.DROPPED;
    }

    /** The responder rejects an qp.access: it moves to ERROR too, as rxe does, and touches nothing. */
    private Wire.Response accessError() {
        qp.enterError();
        return Wire.Response.ACCESS_ERROR;
    }

    /**
     * Runs {@code copy} on {@code [address, address + length)} if {@code rkey} lets the peer reach it with
     * {@code right}: checked against the QP's own remote rights, the key (region, or bound window and its range,
     * rights and — for type 2 — the QP that bound it), and the protection domain. Neither the region's
     * registration nor the window's binding can end while the copy runs.
     *
     * @return false if the access is not allowed (nothing was touched)
     */
    private boolean remoteAccess(int rkey, long address, long length, int right, Consumer<MemorySegment> copy) {
        if ((qp.access & right) == 0) return false;
        KeyTable.Owner target = qp.device.keys.owner(rkey);
        if (target instanceof SoftMr mr) return reaches(mr, rkey, address, length, right) && mr.access(address, length, copy);
        return target instanceof SoftMw mw && mw.pd == qp.pd && mw.access(rkey, address, length, right, qp, copy);
    }

    /** {@link #remoteAccess} of a WRITE's payload; into a region without a lambda, the data path's common case. */
    private boolean remoteWrite(Wire.Request r) {
        int right = Access.REMOTE_WRITE.bit();
        // A zero-length WRITE or READ reaches no memory, so it names no key to check (IBTA C9-88, rxe's check_rkey);
        // the QP's own rights still apply
        if (r.length() == 0) return (qp.access & right) != 0;
        if ((qp.access & right) != 0 && qp.device.keys.region(r.rkey()) instanceof SoftMr mr) {
            return reaches(mr, r.rkey(), r.remoteAddress(), r.length(), right)
                    && mr.copyIn(r.remoteAddress(), r.payload(), 0, r.length());
        }
        return remoteAccess(r.rkey(), r.remoteAddress(), r.length(), right,
                dst -> MemorySegment.copy(r.payload(), 0, dst, ValueLayout.JAVA_BYTE, 0, r.length()));
    }

    /** Whether {@code rkey}, naming {@code mr}, lets this QP's peer reach the range with {@code right}. */
    private boolean reaches(SoftMr mr, int rkey, long address, long length, int right) {
        return mr.key == rkey && mr.pd == qp.pd && (mr.access & right) != 0 && mr.covers(address, length);
    }
}
