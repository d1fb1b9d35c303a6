package io.mooring.lifecycle;

/** Where a resource is in its life. Transitions only move down this list (FAILED may go back to CLOSING on retry). */
public enum ResourceState {
    /** The handle is usable. */
    OPEN,
    /** The handle is closed; the native destroy waits for children to be destroyed and pins to be released. */
    CLOSING,
    /** The native destroy ran and succeeded. */
    DESTROYED,
    /** The native destroy failed; the resource keeps its parents alive until it is retried or abandoned. */
    FAILED,
    /** A failed resource that was given up on: its native object is leaked (and was reported as such). */
    ABANDONED
}
