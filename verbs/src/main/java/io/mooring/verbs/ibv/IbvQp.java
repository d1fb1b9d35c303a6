package io.mooring.verbs.ibv;

import static io.mooring.verbs.ibv.IbvCalls.callAddress;
import static io.mooring.verbs.ibv.IbvCalls.callInt;
import static io.mooring.verbs.ibv.IbvProvider.errnoOf;
import static io.mooring.verbs.ibv.IbvStructs.offsetOf;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.mooring.verbs.Errno;
import io.mooring.verbs.QpStateException;
import io.mooring.verbs.QueueFullException;
import io.mooring.verbs.spi.MrOps;
import io.mooring.verbs.spi.MwOps;
import io.mooring.verbs.spi.QpOps;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.Gid;
import io.mooring.verbs.values.Mtu;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.QpAttribute;
import io.mooring.verbs.values.QpAttributes;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.QpState;
import io.mooring.verbs.values.RecvWr;
import io.mooring.verbs.values.SendWr;
import io.mooring.verbs.values.SgeList;
import java.lang.foreign.MemorySegment;

/**
 * A reliable-connected queue pair ({@code struct ibv_qp}).
 *
 * <p><b>Data path.</b> Each queue owns one native work request ({@code ibv_send_wr} / {@code ibv_recv_wr}), an
 * SGE array of {@link SgeList#CAPACITY} entries and a {@code bad_wr} slot, allocated with the QP and
 * refilled for every post, then handed to the driver through {@code ctx->ops.post_send} / {@code post_recv}: a post
 * allocates nothing and takes no lock of its own — the public layer calls it holding the queue's lock, after it
 * checked the QP's state, and destroys the QP holding both. Immediate data is written big-endian, as the struct
 * holds it.
 */
@SuppressWarnings("restricted") // reads structs at the pointers libibverbs returns; native access is this module's
final class IbvQp implements QpOps {
    private static final long SGE_SIZE = IbvStructs.SGE.byteSize();
    private static final long ATTR_QP_STATE = offsetOf(IbvStructs.QP_ATTR, "qp_state");
    private static final long ATTR_PATH_MTU = offsetOf(IbvStructs.QP_ATTR, "path_mtu");
    private static final long ATTR_RQ_PSN = offsetOf(IbvStructs.QP_ATTR, "rq_psn");
    private static final long ATTR_SQ_PSN = offsetOf(IbvStructs.QP_ATTR, "sq_psn");
    private static final long ATTR_DEST_QP_NUM = offsetOf(IbvStructs.QP_ATTR, "dest_qp_num");
    private static final long ATTR_QP_ACCESS_FLAGS = offsetOf(IbvStructs.QP_ATTR, "qp_access_flags");
    private static final long ATTR_DGID = offsetOf(IbvStructs.QP_ATTR, "ah_attr.grh.dgid");
    private static final long ATTR_SGID_INDEX = offsetOf(IbvStructs.QP_ATTR, "ah_attr.grh.sgid_index");
    private static final long ATTR_HOP_LIMIT = offsetOf(IbvStructs.QP_ATTR, "ah_attr.grh.hop_limit");
    private static final long ATTR_TRAFFIC_CLASS = offsetOf(IbvStructs.QP_ATTR, "ah_attr.grh.traffic_class");
    private static final long ATTR_SL = offsetOf(IbvStructs.QP_ATTR, "ah_attr.sl");
    private static final long ATTR_DLID = offsetOf(IbvStructs.QP_ATTR, "ah_attr.dlid");
    private static final long ATTR_IS_GLOBAL = offsetOf(IbvStructs.QP_ATTR, "ah_attr.is_global");
    private static final long ATTR_AH_PORT_NUM = offsetOf(IbvStructs.QP_ATTR, "ah_attr.port_num");
    private static final long ATTR_PKEY_INDEX = offsetOf(IbvStructs.QP_ATTR, "pkey_index");
    private static final long ATTR_MAX_RD_ATOMIC = offsetOf(IbvStructs.QP_ATTR, "max_rd_atomic");
    private static final long ATTR_MAX_DEST_RD_ATOMIC = offsetOf(IbvStructs.QP_ATTR, "max_dest_rd_atomic");
    private static final long ATTR_MIN_RNR_TIMER = offsetOf(IbvStructs.QP_ATTR, "min_rnr_timer");
    private static final long ATTR_PORT_NUM = offsetOf(IbvStructs.QP_ATTR, "port_num");
    private static final long ATTR_TIMEOUT = offsetOf(IbvStructs.QP_ATTR, "timeout");
    private static final long ATTR_RETRY_CNT = offsetOf(IbvStructs.QP_ATTR, "retry_cnt");
    private static final long ATTR_RNR_RETRY = offsetOf(IbvStructs.QP_ATTR, "rnr_retry");
    /** Everything {@link #query} reads (the kernel fills the whole struct whatever the mask says). */
    private static final int QUERY_MASK = IbvStructs.IBV_QP_STATE | IbvStructs.IBV_QP_ACCESS_FLAGS
            | IbvStructs.IBV_QP_PKEY_INDEX | IbvStructs.IBV_QP_PORT | IbvStructs.IBV_QP_AV | IbvStructs.IBV_QP_PATH_MTU
            | IbvStructs.IBV_QP_TIMEOUT | IbvStructs.IBV_QP_RETRY_CNT | IbvStructs.IBV_QP_RNR_RETRY
            | IbvStructs.IBV_QP_RQ_PSN | IbvStructs.IBV_QP_MAX_QP_RD_ATOMIC | IbvStructs.IBV_QP_MIN_RNR_TIMER
            | IbvStructs.IBV_QP_SQ_PSN | IbvStructs.IBV_QP_MAX_DEST_RD_ATOMIC | IbvStructs.IBV_QP_DEST_QPN;
    private static final long INIT_SEND_CQ = offsetOf(IbvStructs.QP_INIT_ATTR, "send_cq");
    private static final long INIT_RECV_CQ = offsetOf(IbvStructs.QP_INIT_ATTR, "recv_cq");
    private static final long INIT_SRQ = offsetOf(IbvStructs.QP_INIT_ATTR, "srq");
    private static final long INIT_MAX_SEND_WR = offsetOf(IbvStructs.QP_INIT_ATTR, "cap.max_send_wr");
    private static final long INIT_MAX_RECV_WR = offsetOf(IbvStructs.QP_INIT_ATTR, "cap.max_recv_wr");
    private static final long INIT_MAX_SEND_SGE = offsetOf(IbvStructs.QP_INIT_ATTR, "cap.max_send_sge");
    private static final long INIT_MAX_RECV_SGE = offsetOf(IbvStructs.QP_INIT_ATTR, "cap.max_recv_sge");
    private static final long INIT_MAX_INLINE_DATA = offsetOf(IbvStructs.QP_INIT_ATTR, "cap.max_inline_data");
    private static final long INIT_QP_TYPE = offsetOf(IbvStructs.QP_INIT_ATTR, "qp_type");
    private static final long INIT_SQ_SIG_ALL = offsetOf(IbvStructs.QP_INIT_ATTR, "sq_sig_all");
    private static final long BIND_WR_ID = offsetOf(IbvStructs.MW_BIND, "wr_id");
    private static final long BIND_SEND_FLAGS = offsetOf(IbvStructs.MW_BIND, "send_flags");
    private static final long BIND_INFO_MR = offsetOf(IbvStructs.MW_BIND, "bind_info.mr");
    private static final long BIND_INFO_ADDR = offsetOf(IbvStructs.MW_BIND, "bind_info.addr");
    private static final long BIND_INFO_LENGTH = offsetOf(IbvStructs.MW_BIND, "bind_info.length");
    private static final long BIND_INFO_ACCESS = offsetOf(IbvStructs.MW_BIND, "bind_info.mw_access_flags");

    private final IbvPd pd;
    private final IbvContext context;
    private final MemorySegment qp;
    private final int qpn;
    private final String name;
    private final QpCapabilities granted;
    private final NativeBlock block = new NativeBlock();
    // send queue, guarded by the public send queue's lock
    private final MemorySegment sendWr;
    private final MemorySegment sendSges;
    private final MemorySegment badSendWr;
    private final MemorySegment mwBind;
    // receive queue, guarded by the public receive queue's lock
    private final MemorySegment recvWr;
    private final MemorySegment recvSges;
    private final MemorySegment badRecvWr;
    // control path, guarded by control
    private final Object control = new Object();
    private final MemorySegment attr;
    private final MemorySegment initAttr;
    private int port;                  // guarded by control: set at INIT, the port of the address vector
    private volatile boolean destroyed;

    /** With {@code srq} (else null) the QP takes its receives from it and has no receive queue of its own. */
    IbvQp(IbvPd pd, IbvCq sendCq, IbvCq recvCq, QpCapabilities caps, IbvSrq srq) {
        this.pd = pd;
        this.context = pd.context;
        try {
            this.attr = block.allocate(IbvStructs.QP_ATTR);
            this.initAttr = block.allocate(IbvStructs.QP_INIT_ATTR);
            fillInitAttr(initAttr, sendCq.cq, recvCq.cq, caps.maxSendWr(), srq == null ? caps.maxRecvWr() : 0,
                    caps.maxSendSge(), srq == null ? caps.maxRecvSge() : 0, caps.maxInlineData());
            if (srq != null) initAttr.set(ADDRESS, INIT_SRQ, srq.srq);
            MemorySegment created = callAddress(Ibv.CREATE_QP, Ibv.errnoState(), pd.pd, initAttr);
            if (created.equals(MemorySegment.NULL)) {
                throw IbvErrors.fail("ibv_create_qp", Ibv.errno(), pd.name, "asked for " + caps);
            }
            this.qp = created.reinterpret(IbvStructs.QP.byteSize());
        } catch (RuntimeException | Error e) {
            block.free();
            throw e;
        }
        this.qpn = qp.get(JAVA_INT, IbvStructs.QP_QP_NUM);
        this.name = "qpn " + qpn + " on " + context.name;
        // with an SRQ there is no receive queue to grant: the capabilities asked for stand for it
        this.granted = QpCapabilities.builder().maxSendWr(initAttr.get(JAVA_INT, INIT_MAX_SEND_WR))
                .maxRecvWr(srq == null ? initAttr.get(JAVA_INT, INIT_MAX_RECV_WR) : caps.maxRecvWr())
                .maxSendSge(initAttr.get(JAVA_INT, INIT_MAX_SEND_SGE))
                .maxRecvSge(srq == null ? initAttr.get(JAVA_INT, INIT_MAX_RECV_SGE) : caps.maxRecvSge())
                .maxInlineData(initAttr.get(JAVA_INT, INIT_MAX_INLINE_DATA)).build();
        this.sendWr = block.allocate(IbvStructs.SEND_WR);
        this.sendSges = block.allocate(IbvStructs.SGE, SgeList.CAPACITY);
        this.badSendWr = block.allocate(ADDRESS);
        this.mwBind = block.allocate(IbvStructs.MW_BIND);
        this.recvWr = block.allocate(IbvStructs.RECV_WR);
        this.recvSges = block.allocate(IbvStructs.SGE, SgeList.CAPACITY);
        this.badRecvWr = block.allocate(ADDRESS);
        recvWr.set(ADDRESS, IbvStructs.RECV_WR_SG_LIST, recvSges);
    }

    /** Fills an {@code ibv_qp_init_attr} for an RC QP whose every send chooses whether it is signaled. */
    static void fillInitAttr(MemorySegment init, MemorySegment sendCq, MemorySegment recvCq, int maxSendWr,
                             int maxRecvWr, int maxSendSge, int maxRecvSge, int maxInline) {
        init.set(ADDRESS, INIT_SEND_CQ, sendCq);
        init.set(ADDRESS, INIT_RECV_CQ, recvCq);
        init.set(JAVA_INT, INIT_MAX_SEND_WR, maxSendWr);
        init.set(JAVA_INT, INIT_MAX_RECV_WR, maxRecvWr);
        init.set(JAVA_INT, INIT_MAX_SEND_SGE, maxSendSge);
        init.set(JAVA_INT, INIT_MAX_RECV_SGE, maxRecvSge);
        init.set(JAVA_INT, INIT_MAX_INLINE_DATA, maxInline);
        init.set(JAVA_INT, INIT_QP_TYPE, IbvStructs.IBV_QPT_RC);
        init.set(JAVA_INT, INIT_SQ_SIG_ALL, 0);
    }

    @Override
    public int qpNumber() {
        return qpn;
    }

    @Override
    public QpCapabilities capabilities() {
        return granted;
    }

    // ---- control ---------------------------------------------------------------------------------------------

    @Override
    public QpState state() {
        synchronized (control) {
            checkNotDestroyed();
            int rc = callInt(Ibv.QUERY_QP, Ibv.errnoState(), qp, attr, IbvStructs.IBV_QP_STATE, initAttr);
            if (rc != 0) throw IbvErrors.fail("ibv_query_qp", errnoOf(rc), name);
            return stateOf(attr.get(JAVA_INT, ATTR_QP_STATE));
        }
    }

    @Override
    public void modify(QpAttributes a) {
        synchronized (control) {
            checkNotDestroyed();
            attr.fill((byte) 0);
            if (a.isSet(QpAttribute.STATE)) attr.set(JAVA_INT, ATTR_QP_STATE, a.state().code());
            if (a.isSet(QpAttribute.ACCESS_FLAGS)) attr.set(JAVA_INT, ATTR_QP_ACCESS_FLAGS, Access.mask(a.access()));
            if (a.isSet(QpAttribute.PKEY_INDEX)) attr.set(JAVA_SHORT, ATTR_PKEY_INDEX, (short) a.pkeyIndex());
            if (a.isSet(QpAttribute.PORT)) attr.set(JAVA_BYTE, ATTR_PORT_NUM, (byte) a.port());
            if (a.isSet(QpAttribute.PATH_MTU)) attr.set(JAVA_INT, ATTR_PATH_MTU, a.pathMtu().code());
            if (a.isSet(QpAttribute.DEST_QPN)) attr.set(JAVA_INT, ATTR_DEST_QP_NUM, a.destQpNumber());
            if (a.isSet(QpAttribute.RQ_PSN)) attr.set(JAVA_INT, ATTR_RQ_PSN, a.receivePsn());
            if (a.isSet(QpAttribute.SQ_PSN)) attr.set(JAVA_INT, ATTR_SQ_PSN, a.sendPsn());
            if (a.isSet(QpAttribute.MAX_RD_ATOMIC)) attr.set(JAVA_BYTE, ATTR_MAX_RD_ATOMIC, (byte) a.maxRdAtomic());
            if (a.isSet(QpAttribute.MAX_DEST_RD_ATOMIC)) {
                attr.set(JAVA_BYTE, ATTR_MAX_DEST_RD_ATOMIC, (byte) a.maxDestRdAtomic());
            }
            if (a.isSet(QpAttribute.MIN_RNR_TIMER)) attr.set(JAVA_BYTE, ATTR_MIN_RNR_TIMER, (byte) a.minRnrTimerCode());
            if (a.isSet(QpAttribute.TIMEOUT)) attr.set(JAVA_BYTE, ATTR_TIMEOUT, (byte) a.ackTimeoutCode());
            if (a.isSet(QpAttribute.RETRY_COUNT)) attr.set(JAVA_BYTE, ATTR_RETRY_CNT, (byte) a.retryCount());
            if (a.isSet(QpAttribute.RNR_RETRY)) attr.set(JAVA_BYTE, ATTR_RNR_RETRY, (byte) a.rnrRetry());
            if (a.isSet(QpAttribute.ADDRESS_VECTOR)) writeAddressVector(a);
            int rc = callInt(Ibv.MODIFY_QP, Ibv.errnoState(), qp, attr, a.mask());
            if (rc != 0) {
                int errno = errnoOf(rc);
                QpState now = state();
                if (errno == Errno.EINVAL.number() && !now.canMoveTo(a.state())) {
                    throw new QpStateException("ibv_modify_qp", name, now, "moving to " + a.state());
                }
                throw IbvErrors.fail("ibv_modify_qp", errno, name,
                        "moving from " + now + " to " + a.state() + " with " + a);
            }
            if (a.isSet(QpAttribute.PORT)) port = a.port();
        }
    }

    /**
     * The primary path ({@code ah_attr}), from the port the QP was initialised on: the kernel resolves the source
     * GID through that port, and only RESET → INIT can change it. A destination GID makes the route global, which
     * RoCE needs.
     */
    private void writeAddressVector(QpAttributes a) {
        if (a.destGid() != null) {
            attr.set(JAVA_BYTE, ATTR_IS_GLOBAL, (byte) 1);
            MemorySegment.copy(MemorySegment.ofArray(a.destGid().bytes()), 0, attr, ATTR_DGID,
                    IbvStructs.GID.byteSize());
        }
        attr.set(JAVA_BYTE, ATTR_SGID_INDEX, (byte) a.sourceGidIndex());
        attr.set(JAVA_BYTE, ATTR_HOP_LIMIT, (byte) a.hopLimit());
        attr.set(JAVA_BYTE, ATTR_TRAFFIC_CLASS, (byte) a.trafficClass());
        attr.set(JAVA_BYTE, ATTR_SL, (byte) a.serviceLevel());
        attr.set(JAVA_SHORT, ATTR_DLID, (short) a.destLid());
        attr.set(JAVA_BYTE, ATTR_AH_PORT_NUM, (byte) port);
    }

    @Override
    public QpAttributes query() {
        synchronized (control) {
            checkNotDestroyed();
            int rc = callInt(Ibv.QUERY_QP, Ibv.errnoState(), qp, attr, QUERY_MASK, initAttr);
            if (rc != 0) throw IbvErrors.fail("ibv_query_qp", errnoOf(rc), name);
            var q = QpAttributes.builder().state(stateOf(attr.get(JAVA_INT, ATTR_QP_STATE)))
                    .access(Access.of(attr.get(JAVA_INT, ATTR_QP_ACCESS_FLAGS) & Access.mask(Access.REMOTE)))
                    .pkeyIndex(Short.toUnsignedInt(attr.get(JAVA_SHORT, ATTR_PKEY_INDEX)))
                    .port(Byte.toUnsignedInt(attr.get(JAVA_BYTE, ATTR_PORT_NUM)))
                    .destQpNumber(attr.get(JAVA_INT, ATTR_DEST_QP_NUM))
                    .receivePsn(attr.get(JAVA_INT, ATTR_RQ_PSN) & QpAttributes.MAX_PSN)
                    .sendPsn(attr.get(JAVA_INT, ATTR_SQ_PSN) & QpAttributes.MAX_PSN)
                    .maxRdAtomic(Byte.toUnsignedInt(attr.get(JAVA_BYTE, ATTR_MAX_RD_ATOMIC)))
                    .maxDestRdAtomic(Byte.toUnsignedInt(attr.get(JAVA_BYTE, ATTR_MAX_DEST_RD_ATOMIC)))
                    .minRnrTimerCode(attr.get(JAVA_BYTE, ATTR_MIN_RNR_TIMER) & 31)
                    .ackTimeoutCode(attr.get(JAVA_BYTE, ATTR_TIMEOUT) & 31)
                    .retryCount(attr.get(JAVA_BYTE, ATTR_RETRY_CNT) & 7)
                    .rnrRetry(attr.get(JAVA_BYTE, ATTR_RNR_RETRY) & 7)
                    .destLid(Short.toUnsignedInt(attr.get(JAVA_SHORT, ATTR_DLID)))
                    .sourceGidIndex(Byte.toUnsignedInt(attr.get(JAVA_BYTE, ATTR_SGID_INDEX)))
                    .hopLimit(Byte.toUnsignedInt(attr.get(JAVA_BYTE, ATTR_HOP_LIMIT)))
                    .trafficClass(Byte.toUnsignedInt(attr.get(JAVA_BYTE, ATTR_TRAFFIC_CLASS)))
                    .serviceLevel(attr.get(JAVA_BYTE, ATTR_SL) & 15);
            if (attr.get(JAVA_BYTE, ATTR_IS_GLOBAL) != 0) {
                q.destGid(Gid.of(attr.asSlice(ATTR_DGID, IbvStructs.GID.byteSize()).toArray(JAVA_BYTE)));
            }
            int mtu = attr.get(JAVA_INT, ATTR_PATH_MTU);
            if (mtu >= IbvStructs.IBV_MTU_256 && mtu <= IbvStructs.IBV_MTU_4096) q.pathMtu(Mtu.of(mtu));
            return q.build();
        }
    }

    /** A queried state code; one this API does not know (IBV_QPS_UNKNOWN) reads as ERROR. */
    private static QpState stateOf(int code) {
        return code >= 0 && code <= IbvStructs.IBV_QPS_ERR ? QpState.of(code) : QpState.ERROR;
    }

    // ---- posting ---------------------------------------------------------------------------------------------

    @Override
    public void postSend(SendWr wr, long wrId) {
        MemorySegment w = sendWr;
        w.fill((byte) 0);
        int n = fillSges(wr.sgl(), sendSges);
        w.set(JAVA_LONG, IbvStructs.SEND_WR_WR_ID, wrId);
        w.set(ADDRESS, IbvStructs.SEND_WR_SG_LIST, sendSges);
        w.set(JAVA_INT, IbvStructs.SEND_WR_NUM_SGE, n);
        w.set(JAVA_INT, IbvStructs.SEND_WR_OPCODE, wr.opcode().code());
        w.set(JAVA_INT, IbvStructs.SEND_WR_SEND_FLAGS, wr.flags());
        switch (wr.opcode()) {
            case RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ -> {
                w.set(JAVA_LONG, IbvStructs.SEND_WR_WR_RDMA_REMOTE_ADDR, wr.remoteAddress());
                w.set(JAVA_INT, IbvStructs.SEND_WR_WR_RDMA_RKEY, wr.rkey());
            }
            case ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD -> {
                w.set(JAVA_LONG, IbvStructs.SEND_WR_WR_ATOMIC_REMOTE_ADDR, wr.remoteAddress());
                w.set(JAVA_LONG, IbvStructs.SEND_WR_WR_ATOMIC_COMPARE_ADD, wr.compareAdd());
                w.set(JAVA_LONG, IbvStructs.SEND_WR_WR_ATOMIC_SWAP, wr.swap());
                w.set(JAVA_INT, IbvStructs.SEND_WR_WR_ATOMIC_RKEY, wr.rkey());
            }
            case LOCAL_INV -> w.set(JAVA_INT, IbvStructs.SEND_WR_INVALIDATE_RKEY, wr.invalidateRkey());
            default -> { }
        }
        if (wr.opcode().hasImmediate()) w.set(IbvStructs.BE32, IbvStructs.SEND_WR_IMM_DATA, wr.immediate());
        postSendWr();
    }

    @Override
    public int bindWindow(MwOps window, MrOps region, long address, long length, int access, int newRkey, long wrId,
                          boolean signaled) {
        IbvMw mw = (IbvMw) window;
        IbvMr mr = (IbvMr) region;
        int flags = signaled ? IbvStructs.IBV_SEND_SIGNALED : 0;
        if (mw.type == MwType.TYPE_1) return bindType1(mw, mr, address, length, access, wrId, flags);
        MemorySegment w = sendWr;
        w.fill((byte) 0);
        w.set(JAVA_LONG, IbvStructs.SEND_WR_WR_ID, wrId);
        w.set(JAVA_INT, IbvStructs.SEND_WR_OPCODE, IbvStructs.IBV_WR_BIND_MW);
        w.set(JAVA_INT, IbvStructs.SEND_WR_SEND_FLAGS, flags);
        w.set(ADDRESS, IbvStructs.SEND_WR_BIND_MW_MW, mw.mw);
        w.set(JAVA_INT, IbvStructs.SEND_WR_BIND_MW_RKEY, newRkey);
        w.set(ADDRESS, IbvStructs.SEND_WR_BIND_MW_BIND_INFO_MR, mr.mr);
        w.set(JAVA_LONG, IbvStructs.SEND_WR_BIND_MW_BIND_INFO_ADDR, address);
        w.set(JAVA_LONG, IbvStructs.SEND_WR_BIND_MW_BIND_INFO_LENGTH, length);
        w.set(JAVA_INT, IbvStructs.SEND_WR_BIND_MW_BIND_INFO_MW_ACCESS_FLAGS, access);
        postSendWr();
        return newRkey;
    }

    /** {@code ibv_bind_mw}: the driver posts the bind itself and picks the new key, left in {@code mw->rkey}. */
    private int bindType1(IbvMw mw, IbvMr mr, long address, long length, int access, long wrId, int flags) {
        MemorySegment b = mwBind;
        b.fill((byte) 0);
        b.set(JAVA_LONG, BIND_WR_ID, wrId);
        b.set(JAVA_INT, BIND_SEND_FLAGS, flags);
        b.set(ADDRESS, BIND_INFO_MR, mr.mr);
        b.set(JAVA_LONG, BIND_INFO_ADDR, address);
        b.set(JAVA_LONG, BIND_INFO_LENGTH, length);
        b.set(JAVA_INT, BIND_INFO_ACCESS, access);
        int rc = callInt(Ibv.OP_BIND_MW, context.bindMw, qp, mw.mw, b);
        if (rc != 0) throw postFailure("ibv_bind_mw", rc, true);
        return mw.currentRkey();
    }

    private void postSendWr() {
        int rc = callInt(Ibv.OP_POST_SEND, context.postSend, qp, sendWr, badSendWr);
        if (rc != 0) throw postFailure("ibv_post_send", rc, true);
    }

    @Override
    public void postRecv(RecvWr rr, long wrId) {
        fillRecvWr(rr, wrId, recvWr, recvSges);
        int rc = callInt(Ibv.OP_POST_RECV, context.postRecv, qp, recvWr, badRecvWr);
        if (rc != 0) throw postFailure("ibv_post_recv", rc, false);
    }

    /** Fills a preallocated {@code ibv_recv_wr} (its SGE list already pointing at {@code sges}) for one receive. */
    static void fillRecvWr(RecvWr rr, long wrId, MemorySegment recvWr, MemorySegment sges) {
        int n = fillSges(rr.sgl(), sges);
        recvWr.set(JAVA_LONG, IbvStructs.RECV_WR_WR_ID, wrId);
        recvWr.set(JAVA_INT, IbvStructs.RECV_WR_NUM_SGE, n);
    }

    static int fillSges(SgeList sgl, MemorySegment sges) {
        int n = sgl.count();
        for (int i = 0; i < n; i++) {
            long base = i * SGE_SIZE;
            sges.set(JAVA_LONG, base + IbvStructs.SGE_ADDR, sgl.address(i));
            sges.set(JAVA_INT, base + IbvStructs.SGE_LENGTH, sgl.length(i));
            sges.set(JAVA_INT, base + IbvStructs.SGE_LKEY, sgl.lkey(i));
        }
        return n;
    }

    private RuntimeException postFailure(String verb, int rc, boolean send) {
        int errno = rc > 0 ? rc : -rc;
        if (errno == Errno.ENOMEM.number()) {
            return new QueueFullException(verb, name, send ? "send" : "receive",
                    send ? granted.maxSendWr() : granted.maxRecvWr());
        }
        if (errno == Errno.EINVAL.number()) {
            QpState s = state();
            if (!(send ? s.acceptsSends() : s.acceptsReceives())) {
                return new QpStateException(verb, name, s, send ? "posting a send" : "posting a receive");
            }
            if (send && misalignedAtomic()) {
                return IbvErrors.fail(verb, errno, name, "the remote address 0x" + Long.toHexString(
                        sendWr.get(JAVA_LONG, IbvStructs.SEND_WR_WR_ATOMIC_REMOTE_ADDR)) + " of an atomic is not"
                        + " 8-byte aligned; the driver refused it when posted");
            }
        }
        return IbvErrors.fail(verb, errno, name);
    }

    /** Whether the work request just refused is an atomic on a misaligned remote address. */
    private boolean misalignedAtomic() {
        int op = sendWr.get(JAVA_INT, IbvStructs.SEND_WR_OPCODE);
        return (op == IbvStructs.IBV_WR_ATOMIC_CMP_AND_SWP || op == IbvStructs.IBV_WR_ATOMIC_FETCH_AND_ADD)
                && (sendWr.get(JAVA_LONG, IbvStructs.SEND_WR_WR_ATOMIC_REMOTE_ADDR) & (Long.BYTES - 1)) != 0;
    }

    private void checkNotDestroyed() {
        if (destroyed) throw new IllegalStateException(name + " is destroyed");
    }

    // ---- destroy ---------------------------------------------------------------------------------------------

    /** Destroys the QP, then frees its work requests (posts in progress finished: see the class comment). Idempotent. */
    @Override
    public void destroy() {
        synchronized (control) {
            if (destroyed) return;
            int rc = callInt(Ibv.DESTROY_QP, Ibv.errnoState(), qp);
            if (rc != 0) throw IbvErrors.fail("ibv_destroy_qp", errnoOf(rc), name);
            destroyed = true;
            block.free();
        }
    }
}
