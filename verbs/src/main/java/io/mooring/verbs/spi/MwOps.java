package io.mooring.verbs.spi;

/** A memory window ({@code struct ibv_mw}). */
public interface MwOps {
    /** The rkey it was allocated with. */
    int rkey();

    /**
     * A bind of this window completed, giving it {@code rkey}. A provider whose driver identifies the window by
     * its current key at the next bind or invalidate keeps it here; the default does nothing.
     */
    default void bound(int rkey) {}

    /** {@code ibv_dealloc_mw}. */
    void deallocate();
}
