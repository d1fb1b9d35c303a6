package io.mooring.verbs.soft;

import io.mooring.verbs.Errno;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.spi.CqOps;
import io.mooring.verbs.spi.MrOps;
import io.mooring.verbs.spi.MwOps;
import io.mooring.verbs.spi.PdOps;
import io.mooring.verbs.spi.QpOps;
import io.mooring.verbs.spi.SrqOps;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.QpCapabilities;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/** A protection domain: objects of different PDs cannot reach each other's memory. */
final class SoftPd implements PdOps {
    final SoftContext context;
    final int id;
    /**
     * Live MRs, MWs, QPs and SRQs; deallocating with any left fails with EBUSY, as rdma-core does. The NIC's own
     * count, not the graph's: {@link SoftContext#children} says why.
     */
    final AtomicInteger children = new AtomicInteger();

    SoftPd(SoftContext context, int id) {
        this.context = context;
        this.id = id;
    }

    @Override
    public MrOps register(MemorySegment segment, int access) {
        SoftDevice device = context.device;
        var mr = device.keys.add(key -> {
            SoftDevice.pin(segment.byteSize(), "pd " + id);
            return new SoftMr(device, this, key, segment, access);
        }, "ibv_reg_mr", "pd " + id);
        children.incrementAndGet();
        return mr;
    }

    @Override
    public MwOps allocateMw(MwType type) {
        SoftDevice device = context.device;
        var mw = device.keys.add(key -> new SoftMw(device, this, type, key), "ibv_alloc_mw", "pd " + id);
        children.incrementAndGet();
        return mw;
    }

    @Override
    public QpOps createQp(CqOps sendCq, CqOps recvCq, QpCapabilities capabilities, SrqOps srq) {
        var qp = new SoftQp(context.device, this, (SoftCq) sendCq, (SoftCq) recvCq, capabilities, (SoftSrq) srq);
        children.incrementAndGet();
        context.created(qp);
        return qp;
    }

    @Override
    public SrqOps createSrq(int maxWr, int maxSge, Runnable limitReached) {
        var srq = new SoftSrq(this, context.device.newObjectId(), maxWr, limitReached);
        children.incrementAndGet();
        return srq;
    }

    @Override
    public void deallocate() {
        int live = children.get();
        if (live > 0) {
            throw new VerbsException("ibv_dealloc_pd", Errno.EBUSY.number(), "pd " + id,
                    live + " memory regions, windows or queue pairs still use it");
        }
        context.children.decrementAndGet();
    }
}
