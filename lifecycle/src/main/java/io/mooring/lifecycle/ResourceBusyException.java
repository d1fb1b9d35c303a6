package io.mooring.lifecycle;

import java.util.List;
import java.util.stream.Collectors;

/**
 * A {@link ClosePolicy#STRICT} close found live children. The resource stays open; close the children first or
 * use {@link Resource#closeTree()}. This is the graph's counterpart of {@code EBUSY} from
 * {@code ibv_dealloc_pd}, raised before the native call could fail.
 */
public final class ResourceBusyException extends MooringException {
    private static final long serialVersionUID = 1L;

    private final transient ResourceInfo resource;
    private final transient List<ResourceInfo> liveChildren;

    ResourceBusyException(ResourceInfo resource, List<ResourceInfo> liveChildren) {
        this(resource, liveChildren, "cannot close " + resource.name() + " (policy STRICT): " + liveChildren.size()
                + " live " + (liveChildren.size() == 1 ? "child: " : "children: ")
                + liveChildren.stream().map(ResourceInfo::toString).collect(Collectors.joining(", "))
                + "; close them first or use closeTree()");
    }

    /**
     * For an object that keeps its children alive for handles of its own (a registration cache's regions for its
     * registrations): {@code message} says which handles to close.
     */
    public ResourceBusyException(ResourceInfo resource, List<ResourceInfo> liveChildren, String message) {
        super(message);
        this.resource = resource;
        this.liveChildren = List.copyOf(liveChildren);
    }

    /** The resource that could not be closed. */
    public ResourceInfo resource() {
        return resource;
    }

    /** Its children that were still alive, with creation sites when leak detection is PARANOID. */
    public List<ResourceInfo> liveChildren() {
        return liveChildren;
    }
}
