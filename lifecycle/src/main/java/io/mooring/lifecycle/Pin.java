package io.mooring.lifecycle;

/**
 * A temporary hold on a resource: while any pin is held the resource's native destroy cannot run (closing it
 * is still allowed and takes effect when the last pin goes). Taken by {@link Resource#pin()}; used as
 * {@code try (var pin = mr.pin()) { ... }} or stored with an in-flight work request and closed on completion.
 *
 * <p>Closing is idempotent. A pin is owned by one thread at a time: hand it over through a happens-before edge
 * (a queue, a future) rather than closing it from two threads at once.
 */
public final class Pin implements AutoCloseable {
    private Node node;

    Pin(Node node) {
        this.node = node;
    }

    /** Releases the hold; if the resource was closed meanwhile and this was its last hold, destroys it now. */
    @Override
    public void close() {
        Node n = node;
        if (n != null) {
            node = null;
            n.unpin();
        }
    }
}
