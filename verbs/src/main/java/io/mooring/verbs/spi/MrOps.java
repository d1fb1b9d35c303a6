package io.mooring.verbs.spi;

/** A registered memory region ({@code struct ibv_mr}). */
public interface MrOps {
    int lkey();

    int rkey();

    /** {@code ibv_dereg_mr}; called after every work request using it completed. */
    void deregister();
}
