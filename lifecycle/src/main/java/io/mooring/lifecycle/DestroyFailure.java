package io.mooring.lifecycle;

/**
 * A native destroy that failed, and the two ways out of it. Until one of them succeeds the failed resource
 * stays in the graph and keeps its parents alive, so nothing is destroyed on top of it and nothing is
 * silently leaked.
 */
public final class DestroyFailure {
    private final Node node;
    private final Throwable cause;

    DestroyFailure(Node node, Throwable cause) {
        this.node = node;
        this.cause = cause;
    }

    /** The resource whose destroy failed (a snapshot taken now). */
    public ResourceInfo resource() {
        return node.info();
    }

    /** What the destroy action threw. */
    public Throwable cause() {
        return cause;
    }

    /**
     * Runs the destroy action again; on success the resource is destroyed and its parents may follow.
     *
     * @throws DestroyFailedException if it fails again (or a parent's destroy that it unblocked fails)
     * @throws IllegalStateException  if the resource is no longer FAILED (already retried or abandoned)
     */
    public void retry() {
        node.retryDestroy();
    }

    /**
     * Gives up on the native object: it is logged as leaked, the resource becomes
     * {@link ResourceState#ABANDONED}, and its parents are released (and destroyed if they were closed).
     *
     * @throws IllegalStateException if the resource is no longer FAILED
     */
    public void abandon() {
        node.abandon();
    }

    @Override
    public String toString() {
        return "destroy of " + node.name() + " failed: " + cause;
    }
}
