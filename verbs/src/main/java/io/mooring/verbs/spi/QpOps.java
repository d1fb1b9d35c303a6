package io.mooring.verbs.spi;

import io.mooring.verbs.testing.FaultOps;
import io.mooring.verbs.testing.FaultPlan;
import io.mooring.verbs.values.QpAttributes;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.QpState;
import io.mooring.verbs.values.RecvWr;
import io.mooring.verbs.values.SendWr;

/**
 * A reliable-connected queue pair ({@code struct ibv_qp}). The public layer calls {@link #postSend} and
 * {@link #bindWindow} holding the send queue's lock, {@link #postRecv} holding the receive queue's, after it checked
 * that the QP's state takes the post; it calls {@link #modify} and {@link #destroy} holding both.
 */
public interface QpOps {
    int qpNumber();

    /** The current state ({@code ibv_query_qp}); the NIC may have moved it to ERROR on its own. */
    QpState state();

    /** The capabilities actually granted (at least those asked for). */
    QpCapabilities capabilities();

    /**
     * What a peer must present to connect to this QP (the peer's {@code QpInfo.token}): a secret the
     * provider draws anew at every reset, or 0 if its transport needs none.
     */
    default long token() {
        return 0;
    }

    /**
     * {@code ibv_modify_qp} with the fields {@code attributes} sets (always a state); the public API has already
     * checked that the transition is allowed from the current state and that the values suit the device. Moving to
     * ERROR again, from ERROR, flushes receives posted since.
     */
    void modify(QpAttributes attributes);

    /**
     * {@code ibv_query_qp}: the state, the attributes set since the last reset as the device keeps them (it may
     * have granted more than asked), and the PSNs as they are now: the next to send and the next expected.
     */
    QpAttributes query();

    /** {@code ibv_post_send} of one request, with {@code wrId} instead of the request's own id. */
    void postSend(SendWr request, long wrId);

    /** {@code ibv_post_recv} of one request, with {@code wrId} instead of the request's own id. */
    void postRecv(RecvWr request, long wrId);

    /**
     * Binds a memory window to a range of a region: a type 2 window through an {@code IBV_WR_BIND_MW} work
     * request carrying {@code newRkey}; a type 1 window through {@code ibv_bind_mw}, which picks the key.
     *
     * @return the window's rkey once the bind completes
     */
    int bindWindow(MwOps window, MrOps region, long address, long length, int access, int newRkey, long wrId,
                   boolean signaled);

    /**
     * Injects faults per {@code plan} into this QP's traffic; only the soft provider can.
     *
     * @throws UnsupportedOperationException if the provider cannot
     * @throws IllegalStateException if this QP has faults injected already (its own or its device's)
     */
    default FaultOps injectFaults(FaultPlan plan) {
        throw new UnsupportedOperationException(ContextOps.NO_FAULTS + "qpn " + qpNumber());
    }

    /** {@code ibv_destroy_qp}. Once it returns, the NIC touches no memory on this QP's behalf. */
    void destroy();
}
