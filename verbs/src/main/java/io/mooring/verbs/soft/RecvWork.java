package io.mooring.verbs.soft;

/**
 * A receive taken from its queue to be filled (or flushed), whose entries' lkeys belong to {@code pd} (the QP's, or
 * its shared receive queue's). Queued receives are kept as plain values in a {@link ReceiveRing}.
 */
final class RecvWork {
    long wrId;
    final Sges sges = new Sges();
    SoftPd pd;

    /** The bytes the receive can hold. */
    long capacity() {
        return sges.totalLength();
    }
}
