package io.mooring.verbs.spi;

import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.QpCapabilities;
import java.lang.foreign.MemorySegment;

/** A protection domain ({@code struct ibv_pd}). */
public interface PdOps {
    /** {@code ibv_reg_mr} of a native segment with an {@code IBV_ACCESS_*} mask. */
    MrOps register(MemorySegment segment, int access);

    /** {@code ibv_alloc_mw}. */
    MwOps allocateMw(MwType type);

    /**
     * {@code ibv_create_qp} of a reliable-connected QP; with {@code srq} (else null) its receives come from that
     * shared receive queue and the receive capabilities are not used.
     */
    QpOps createQp(CqOps sendCq, CqOps recvCq, QpCapabilities capabilities, SrqOps srq);

    /**
     * {@code ibv_create_srq} with room for {@code maxWr} receives of {@code maxSge} entries, not armed;
     * {@code limitReached} is run, on a thread of the provider's, at each limit event ({@link SrqOps#arm}).
     */
    SrqOps createSrq(int maxWr, int maxSge, Runnable limitReached);

    /** {@code ibv_dealloc_pd}; called after every child was destroyed. */
    void deallocate();
}
