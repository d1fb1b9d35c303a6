package io.mooring.verbs.spi;

/** A memory window ({@code struct ibv_mw}). */
public interface MwOps {
    /** The rkey it was allocated with. */
    int rkey();

    /** {@code ibv_dealloc_mw}. */
    void deallocate();
}
