package io.mooring.verbs.values;

/**
 * What a provider reads of a receive work request ({@code struct ibv_recv_wr}): where an incoming SEND lands.
 * {@link io.mooring.verbs.ReceiveRequest} is the request applications build.
 */
public interface RecvWr {
    /** The caller's id, reported in the completion. */
    long wrId();

    SgeList sgl();
}
