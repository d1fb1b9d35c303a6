package io.mooring.lease;

/** How a lease confines the peer to exactly its block. */
public enum Isolation {
    /**
     * A type 2 memory window bound over the block, invalidated when the lease ends. Chosen where the device
     * enforces a window's bounds.
     */
    WINDOW,
    /**
     * A registration of the block's memory of its own, deregistered when the lease ends. Chosen where windows
     * are missing or their bounds are not enforced (rxe checks a window access against the whole region).
     */
    DEDICATED_REGISTRATION,
    /**
     * The chunk region's own rkey: the peer can reach every neighbour of the block. Only by explicit
     * configuration, for trusted peers.
     */
    WHOLE_REGION
}
