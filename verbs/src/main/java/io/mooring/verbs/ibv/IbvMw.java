package io.mooring.verbs.ibv;

import static io.mooring.verbs.ibv.IbvCalls.callInt;
import static io.mooring.verbs.ibv.IbvProvider.errnoOf;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.mooring.verbs.spi.MwOps;
import io.mooring.verbs.values.MwType;
import java.lang.foreign.MemorySegment;

/**
 * A memory window ({@code struct ibv_mw}). Its rkey is read at allocation. After a type-2 bind the driver does
 * not update {@code ibv_mw.rkey}, but rxe's provider puts that field into the next bind's work request as the
 * window's identity, and its kernel refuses the bind (MW_BIND_ERR) unless it is the key of the last bind: so
 * {@link #bound} writes each completed bind's key there, as {@code ibv_bind_mw} does for type 1.
 */
final class IbvMw implements MwOps {
    final IbvPd pd;
    final MemorySegment mw;
    final MwType type;
    private final int rkey;
    private boolean deallocated;

    IbvMw(IbvPd pd, MemorySegment mw, MwType type) {
        this.pd = pd;
        this.mw = mw;
        this.type = type;
        this.rkey = mw.get(JAVA_INT, IbvStructs.MW_RKEY);
    }

    @Override
    public int rkey() {
        return rkey;
    }

    @Override
    public void bound(int key) {
        mw.set(JAVA_INT, IbvStructs.MW_RKEY, key);
    }

    /** {@code ibv_mw.rkey} now (a type-1 bind through {@code ibv_bind_mw} updates it). */
    int currentRkey() {
        return mw.get(JAVA_INT, IbvStructs.MW_RKEY);
    }

    @Override
    public synchronized void deallocate() {
        if (deallocated) return;
        int rc = callInt(Ibv.OP_DEALLOC_MW, pd.context.deallocMw, Ibv.errnoState(), mw);
        if (rc != 0) throw IbvErrors.fail("ibv_dealloc_mw", errnoOf(rc), type + " window in " + pd.name);
        deallocated = true;
    }
}
