package io.mooring.lifecycle;

import java.util.List;

/**
 * A snapshot of one resource, as listeners, exceptions and diagnostics see it. Holding one does not keep the
 * resource alive.
 *
 * @param kind         what the resource is, e.g. {@code "pd"} or {@code "mr"}
 * @param id           unique within its graph
 * @param description  free text given at creation (e.g. {@code "qpn=17"}); empty if none
 * @param state        the state when the snapshot was taken
 * @param pins         pins held when the snapshot was taken
 * @param creationSite the stack that created it, innermost first, starting at the caller of the graph; empty unless leak detection is {@link LeakDetection#PARANOID}
 */
public record ResourceInfo(String kind, long id, String description, ResourceState state, long pins,
                           List<StackTraceElement> creationSite) {

    public ResourceInfo {
        creationSite = List.copyOf(creationSite);
    }

    /** {@code kind#id}, the name every message uses. */
    public String name() {
        return kind + "#" + id;
    }

    /** The frame that asked for the resource (the first one outside the graph's own code), or empty. */
    public String createdAt() {
        return creationSite.isEmpty() ? "" : creationSite.getFirst().toString();
    }

    @Override
    public String toString() {
        var s = new StringBuilder(name());
        if (!description.isEmpty()) s.append(" (").append(description).append(')');
        String site = createdAt();
        if (!site.isEmpty()) s.append(" created at ").append(site);
        return s.toString();
    }
}
