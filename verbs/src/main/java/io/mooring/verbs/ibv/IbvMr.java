package io.mooring.verbs.ibv;

import static io.mooring.verbs.ibv.IbvCalls.callInt;
import static io.mooring.verbs.ibv.IbvProvider.errnoOf;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.mooring.verbs.spi.MrOps;
import java.lang.foreign.MemorySegment;

/** A registered memory region ({@code struct ibv_mr}). */
final class IbvMr implements MrOps {
    final IbvPd pd;
    final MemorySegment mr;
    private final int lkey;
    private final int rkey;
    private boolean deregistered;

    IbvMr(IbvPd pd, MemorySegment mr) {
        this.pd = pd;
        this.mr = mr;
        this.lkey = mr.get(JAVA_INT, IbvStructs.MR_LKEY);
        this.rkey = mr.get(JAVA_INT, IbvStructs.MR_RKEY);
    }

    @Override
    public int lkey() {
        return lkey;
    }

    @Override
    public int rkey() {
        return rkey;
    }

    @Override
    public synchronized void deregister() {
        if (deregistered) return;
        int rc = callInt(Ibv.DEREG_MR, Ibv.errnoState(), mr);
        if (rc != 0) {
            throw IbvErrors.fail("ibv_dereg_mr", errnoOf(rc), "mr lkey=0x" + Integer.toHexString(lkey) + " in "
                    + pd.name, "a memory window may still be bound to it");
        }
        deregistered = true;
    }
}
