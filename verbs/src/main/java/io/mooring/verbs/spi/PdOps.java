package io.mooring.verbs.spi;

import io.mooring.verbs.MwType;
import io.mooring.verbs.QpCapabilities;
import java.lang.foreign.MemorySegment;

/** A protection domain ({@code struct ibv_pd}). */
public interface PdOps {
    /** {@code ibv_reg_mr} of a native segment with an {@code IBV_ACCESS_*} mask. */
    MrOps register(MemorySegment segment, int access);

    /** {@code ibv_alloc_mw}. */
    MwOps allocateMw(MwType type);

    /** {@code ibv_create_qp} of a reliable-connected QP. */
    QpOps createQp(CqOps sendCq, CqOps recvCq, QpCapabilities capabilities);

    /** {@code ibv_dealloc_pd}; called after every child was destroyed. */
    void deallocate();
}
