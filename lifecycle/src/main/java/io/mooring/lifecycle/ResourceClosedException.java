package io.mooring.lifecycle;

/** An operation needed an open resource and found it closed (or closing). */
public final class ResourceClosedException extends MooringException {
    private static final long serialVersionUID = 1L;

    private final transient ResourceInfo resource;

    public ResourceClosedException(ResourceInfo resource, String message) {
        super(message);
        this.resource = resource;
    }

    /** The closed resource. */
    public ResourceInfo resource() {
        return resource;
    }
}
