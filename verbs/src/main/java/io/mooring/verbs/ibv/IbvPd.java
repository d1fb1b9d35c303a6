package io.mooring.verbs.ibv;

import static io.mooring.verbs.ibv.IbvCalls.callAddress;
import static io.mooring.verbs.ibv.IbvCalls.callInt;
import static io.mooring.verbs.ibv.IbvProvider.errnoOf;

import io.mooring.verbs.Errno;
import io.mooring.verbs.spi.CqOps;
import io.mooring.verbs.spi.MrOps;
import io.mooring.verbs.spi.MwOps;
import io.mooring.verbs.spi.PdOps;
import io.mooring.verbs.spi.QpOps;
import io.mooring.verbs.spi.SrqOps;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.QpCapabilities;
import java.lang.foreign.MemorySegment;

/** A protection domain ({@code struct ibv_pd}). */
@SuppressWarnings("restricted") // reads structs at the pointers libibverbs returns; native access is this module's
final class IbvPd implements PdOps {
    final IbvContext context;
    final MemorySegment pd;
    final String name;
    private boolean deallocated;

    IbvPd(IbvContext context, MemorySegment pd) {
        this.context = context;
        this.pd = pd;
        this.name = "pd on " + context.name;
    }

    @Override
    public MrOps register(MemorySegment segment, int access) {
        MemorySegment mr = callAddress(Ibv.REG_MR, Ibv.errnoState(), pd, segment, segment.byteSize(), access);
        if (mr.equals(MemorySegment.NULL)) {
            throw IbvErrors.fail("ibv_reg_mr", Ibv.errno(), name, segment.byteSize() + " bytes at 0x"
                    + Long.toHexString(segment.address()));
        }
        return new IbvMr(this, mr.reinterpret(IbvStructs.MR.byteSize()));
    }

    @Override
    public MwOps allocateMw(MwType type) {
        if (context.allocMw.equals(MemorySegment.NULL)) {
            throw IbvErrors.fail("ibv_alloc_mw", Errno.EOPNOTSUPP.number(), name, context.name + " has no alloc_mw");
        }
        MemorySegment mw = callAddress(Ibv.OP_ALLOC_MW, context.allocMw, Ibv.errnoState(), pd, type.code());
        if (mw.equals(MemorySegment.NULL)) throw IbvErrors.fail("ibv_alloc_mw", Ibv.errno(), name, type.toString());
        return new IbvMw(this, mw.reinterpret(IbvStructs.MW.byteSize()), type);
    }

    @Override
    public QpOps createQp(CqOps sendCq, CqOps recvCq, QpCapabilities capabilities, SrqOps srq) {
        return new IbvQp(this, (IbvCq) sendCq, (IbvCq) recvCq, capabilities, (IbvSrq) srq);
    }

    @Override
    public SrqOps createSrq(int maxWr, int maxSge, Runnable limitReached) {
        return new IbvSrq(this, maxWr, maxSge, limitReached);
    }

    @Override
    public synchronized void deallocate() {
        if (deallocated) return;
        int rc = callInt(Ibv.DEALLOC_PD, Ibv.errnoState(), pd);
        if (rc != 0) throw IbvErrors.fail("ibv_dealloc_pd", errnoOf(rc), name);
        deallocated = true;
    }
}
