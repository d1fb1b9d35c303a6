package io.mooring.verbs.spi;

/** A completion queue with its completion channel ({@code struct ibv_cq}, {@code struct ibv_comp_channel}). */
public interface CqOps {
    /**
     * {@code ibv_poll_cq}: hands up to {@code max} completions to {@code sink}; returns how many. Called by one
     * thread at a time (the public layer holds the CQ's poll lock).
     */
    int poll(int max, CompletionSink sink);

    /** {@code ibv_req_notify_cq}: the next completion raises an event. */
    void requestNotify();

    /**
     * Waits for an event requested by {@link #requestNotify()} ({@code ibv_get_cq_event} and
     * {@code ibv_ack_cq_events}).
     *
     * @return false if none arrived within the timeout
     */
    boolean awaitEvent(long timeoutNanos) throws InterruptedException;

    /**
     * Makes the {@link #awaitEvent} under way return true at once, or the next one if none is (a wake is kept, not
     * lost): another thread wants the poller to look up. From any thread; a no-op once the CQ is destroyed.
     */
    void wake();

    /** {@code ibv_destroy_cq} and its channel; called after every QP on it was destroyed. */
    void destroy();
}
