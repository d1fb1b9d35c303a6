package io.mooring.verbs.ibv;

import static io.mooring.verbs.ibv.IbvCalls.callAddress;
import static io.mooring.verbs.ibv.IbvCalls.callInt;
import static io.mooring.verbs.ibv.IbvProvider.errnoOf;
import static io.mooring.verbs.ibv.IbvStructs.offsetOf;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.mooring.verbs.Errno;
import io.mooring.verbs.QueueFullException;
import io.mooring.verbs.spi.SrqOps;
import io.mooring.verbs.values.RecvWr;
import io.mooring.verbs.values.SgeList;
import java.lang.foreign.MemorySegment;

/**
 * A shared receive queue ({@code struct ibv_srq}). Like a QP's receive queue it owns one native
 * {@code ibv_recv_wr} and SGE array, refilled per post — under the public queue's lock, so it takes none itself —
 * and handed to the driver through {@code ctx->ops.post_srq_recv}. Its limit event arrives through the context's
 * {@link IbvAsyncEvents}, which finds it by address in {@link IbvContext#srqs}.
 */
@SuppressWarnings("restricted") // reads structs at the pointers libibverbs returns; native access is this module's
final class IbvSrq implements SrqOps {
    private static final long INIT_MAX_WR = offsetOf(IbvStructs.SRQ_INIT_ATTR, "attr.max_wr");
    private static final long INIT_MAX_SGE = offsetOf(IbvStructs.SRQ_INIT_ATTR, "attr.max_sge");
    private static final long ATTR_SRQ_LIMIT = offsetOf(IbvStructs.SRQ_ATTR, "srq_limit");

    private final IbvPd pd;
    private final IbvContext context;
    final MemorySegment srq;
    private final String name;
    private final int maxWr;
    private final Runnable limitReached;
    private final NativeBlock block = new NativeBlock();
    private final MemorySegment recvWr;
    private final MemorySegment sges;
    private final MemorySegment badWr;
    private final MemorySegment attr;
    private boolean destroyed;

    IbvSrq(IbvPd pd, int maxWr, int maxSge, Runnable limitReached) {
        this.pd = pd;
        this.context = pd.context;
        this.maxWr = maxWr;
        this.limitReached = limitReached;
        try {
            MemorySegment init = block.allocate(IbvStructs.SRQ_INIT_ATTR);
            init.set(JAVA_INT, INIT_MAX_WR, maxWr);
            init.set(JAVA_INT, INIT_MAX_SGE, maxSge);
            MemorySegment created = callAddress(Ibv.CREATE_SRQ, Ibv.errnoState(), pd.pd, init);
            if (created.equals(MemorySegment.NULL)) {
                throw IbvErrors.fail("ibv_create_srq", Ibv.errno(), pd.name, "max_wr=" + maxWr + " max_sge=" + maxSge);
            }
            this.srq = created;
        } catch (RuntimeException | Error e) {
            block.free();
            throw e;
        }
        this.name = "srq on " + context.name;
        this.recvWr = block.allocate(IbvStructs.RECV_WR);
        this.sges = block.allocate(IbvStructs.SGE, SgeList.CAPACITY);
        this.badWr = block.allocate(ADDRESS);
        this.attr = block.allocate(IbvStructs.SRQ_ATTR);
        recvWr.set(ADDRESS, IbvStructs.RECV_WR_SG_LIST, sges);
        context.srqs.put(srq.address(), this);
    }

    @Override
    public void postRecv(RecvWr rr, long wrId) {
        IbvQp.fillRecvWr(rr, wrId, recvWr, sges);
        int rc = callInt(Ibv.OP_POST_SRQ_RECV, context.postSrqRecv, srq, recvWr, badWr);
        if (rc == 0) return;
        int errno = errnoOf(rc);
        if (errno == Errno.ENOMEM.number()) {
            throw new QueueFullException("ibv_post_srq_recv", name, "shared receive", maxWr);
        }
        throw IbvErrors.fail("ibv_post_srq_recv", errno, name);
    }

    @Override
    public void arm(int limit) {
        attr.set(JAVA_INT, ATTR_SRQ_LIMIT, limit);
        int rc = callInt(Ibv.MODIFY_SRQ, Ibv.errnoState(), srq, attr, IbvStructs.IBV_SRQ_LIMIT);
        if (rc != 0) throw IbvErrors.fail("ibv_modify_srq", errnoOf(rc), name, "arming the limit at " + limit);
    }

    @Override
    public int limit() {
        int rc = callInt(Ibv.QUERY_SRQ, Ibv.errnoState(), srq, attr);
        if (rc != 0) throw IbvErrors.fail("ibv_query_srq", errnoOf(rc), name);
        return attr.get(JAVA_INT, ATTR_SRQ_LIMIT);
    }

    /** The device raised {@code IBV_EVENT_SRQ_LIMIT_REACHED} (on the async event thread, after its acknowledgement). */
    void limitReached() {
        limitReached.run();
    }

    /** {@code ibv_destroy_srq}, then frees its work request. Idempotent. */
    @Override
    public synchronized void destroy() {
        if (destroyed) return;
        int rc = callInt(Ibv.DESTROY_SRQ, Ibv.errnoState(), srq);
        if (rc != 0) throw IbvErrors.fail("ibv_destroy_srq", errnoOf(rc), name);
        destroyed = true;
        context.srqs.remove(srq.address(), this);
        block.free();
    }
}
