package io.mooring.lifecycle;

import java.util.Optional;

/**
 * An operation needed an open object and found it closed (or closing): a resource of the graph, or a handle outside
 * it (a registration of a cache, an endpoint, a listener). The message names what was closed.
 */
public final class ResourceClosedException extends MooringException {
    private static final long serialVersionUID = 1L;

    private final transient ResourceInfo resource;

    public ResourceClosedException(ResourceInfo resource, String message) {
        super(message);
        this.resource = resource;
    }

    /** A handle that is no resource of the graph was closed; {@code message} names it. */
    public ResourceClosedException(String message) {
        this(null, message);
    }

    /** The closed resource; empty for a handle outside the graph. */
    public Optional<ResourceInfo> resource() {
        return Optional.ofNullable(resource);
    }
}
