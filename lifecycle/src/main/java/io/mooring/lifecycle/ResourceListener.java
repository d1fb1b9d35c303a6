package io.mooring.lifecycle;

/**
 * Observes a graph: the hook that stats and JFR events are built on. Methods are called on whichever thread
 * caused the transition (possibly several at once, possibly the Cleaner's) and must be fast and thread-safe.
 * An exception thrown by a listener is logged and otherwise ignored: it cannot break the graph.
 */
public interface ResourceListener {
    /** A resource was attached to the graph. */
    default void created(ResourceInfo resource) {}

    /** A handle was closed (explicitly, by {@code closeTree}, or by the Cleaner after a leak). */
    default void closed(ResourceInfo resource) {}

    /** The native destroy ran and succeeded. */
    default void destroyed(ResourceInfo resource) {}

    /** A handle became unreachable without being closed; its destroy now runs on the {@link Housekeeper}'s thread. */
    default void leaked(ResourceInfo resource) {}

    /** The native destroy failed with {@code cause}; the resource is {@link ResourceState#FAILED}. */
    default void destroyFailed(ResourceInfo resource, Throwable cause) {}
}
