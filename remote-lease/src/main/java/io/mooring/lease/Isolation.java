package io.mooring.lease;

/**
 * How a lease confines a peer to exactly its block. With {@link #WINDOW} and {@link #DEDICATED_REGISTRATION} the
 * peer's key is a type 2 memory window bound on that peer's QP: a key another peer learns or guesses reaches
 * nothing through its own QP (the device checks it; {@link IsolationProbe} makes sure it does).
 */
public enum Isolation {
    /**
     * A window bound over the block's bytes of its chunk's registration, invalidated when the lease ends. Chosen
     * where the device enforces a window's bounds.
     */
    WINDOW,
    /**
     * A window bound over a registration of the block's bytes alone, which has no remote rights of its own: the
     * registration bounds the access where the device checks a window access against its whole region (rxe does),
     * the window confines it to the peer's QP. Both end with the lease.
     */
    DEDICATED_REGISTRATION,
    /**
     * The chunk region's own rkey: the peer can reach every neighbour of the block, and so can any peer of the
     * endpoint that learns the key. Only by explicit configuration, for trusted peers.
     */
    WHOLE_REGION
}
