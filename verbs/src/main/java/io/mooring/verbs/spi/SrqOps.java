package io.mooring.verbs.spi;

import io.mooring.verbs.values.RecvWr;

/**
 * A shared receive queue ({@code struct ibv_srq}). The public layer calls {@link #postRecv}, {@link #arm} and {@link #limit} with
 * the queue's lock held, one at a time, so a provider needs no lock of its own for them.
 */
public interface SrqOps {
    /** {@code ibv_post_srq_recv} of one request, with {@code wrId} instead of the request's own id. */
    void postRecv(RecvWr request, long wrId);

    /**
     * {@code ibv_modify_srq(IBV_SRQ_LIMIT)}: once fewer than {@code limit} receives are posted, the provider calls
     * the listener it was created with ({@code IBV_EVENT_SRQ_LIMIT_REACHED}) and disarms; 0 disarms now.
     */
    void arm(int limit);

    /** {@code ibv_query_srq}: the armed limit, 0 when not armed (also once the limit event disarmed it). */
    int limit();

    /** {@code ibv_destroy_srq}; called after every QP using it was destroyed. */
    void destroy();
}
