package io.mooring.verbs.soft;

import io.mooring.verbs.values.SgeList;


/** A posted receive, whose entries' lkeys belong to {@code pd} (the QP's, or its shared receive queue's). */
final class RecvWork implements WorkRing.Entry<RecvWork> {
    long wrId;
    final Sges sges = new Sges();
    SoftPd pd;

    void set(long wrId, SgeList sgl, SoftPd pd) {
        this.wrId = wrId;
        this.sges.copyFrom(sgl);
        this.pd = pd;
    }

    @Override
    public void copyFrom(RecvWork other) {
        wrId = other.wrId;
        sges.copyFrom(other.sges);
        pd = other.pd;
    }

    /** The bytes the receive can hold. */
    long capacity() {
        return sges.totalLength();
    }
}
