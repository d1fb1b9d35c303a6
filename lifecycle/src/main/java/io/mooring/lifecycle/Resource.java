package io.mooring.lifecycle;

import java.lang.ref.Cleaner;
import java.util.List;

/**
 * The handle of one native object in a {@link ResourceGraph}: what a verbs object, chunk or lease holds to
 * take part in ordered teardown.
 *
 * <p>A handle keeps its parents' handles reachable (an MR keeps its PD alive), never the other way round, so
 * a parent whose handle is dropped while children live is reclaimed only after them. {@code close()} is
 * idempotent; after it {@link #pin()}, {@link #createChild}, {@link #parents()}, {@link #children()} and
 * {@link #checkOpen()} throw {@link ResourceClosedException} naming kind and id, while the descriptive
 * accessors keep working.
 *
 * <p>Creating a native child safely: pin the parent while the native object is being made (so the parent
 * cannot be destroyed under it), then attach it. If the parent was closed meanwhile, the attach runs the
 * child's destroy action itself and throws, so the native object never leaks:
 * <pre>{@code
 * try (var hold = pd.pin()) {
 *     MemorySegment mr = ibvRegMr(pdPointer, buf, access);            // native create
 *     return pd.createChild("mr", "len=" + len, () -> ibvDeregMr(mr)); // attach (undoes mr on failure)
 * }
 * }</pre>
 */
public final class Resource implements AutoCloseable {
    private final Node node;
    private final List<Resource> parents;
    private final Cleaner.Cleanable cleanable;

    Resource(Node node, List<Resource> parents, Housekeeper cleaner) {
        this.node = node;
        this.parents = parents;
        // The action captures the node only: capturing `this` would keep the handle reachable forever.
        this.cleanable = cleaner.register(this, node::reapLeaked);
    }

    Node node() {
        return node;
    }

    /** The graph this resource belongs to. */
    public ResourceGraph graph() {
        return node.graph;
    }

    /** What it is, e.g. {@code "pd"}. */
    public String kind() {
        return node.kind;
    }

    /** Unique within the graph. */
    public long id() {
        return node.id;
    }

    /** The description given at creation, or empty. */
    public String description() {
        return node.description;
    }

    /** Its state now. */
    public ResourceState state() {
        return node.state();
    }

    /** True until {@code close()}. */
    public boolean isOpen() {
        return node.state() == ResourceState.OPEN;
    }

    /** A snapshot for messages and diagnostics. */
    public ResourceInfo info() {
        return node.info();
    }

    /**
     * Throws unless the handle is open: the guard every operation of a module's handle class starts with.
     *
     * @throws ResourceClosedException naming kind, id and state
     */
    public void checkOpen() {
        if (node.state() != ResourceState.OPEN) throw node.closedError("use it");
    }

    /** The handles this resource depends on. */
    public List<Resource> parents() {
        checkOpen();
        return parents;
    }

    /** Its children that are not destroyed yet. */
    public List<ResourceInfo> children() {
        checkOpen();
        return node.liveChildren().stream().map(Node::info).toList();
    }

    /**
     * Takes a hold that keeps the native object alive until the pin is closed. Lock-free: one atomic add.
     *
     * @throws ResourceClosedException if the handle is closed
     */
    public Pin pin() {
        node.pin();
        return new Pin(node);
    }

    /**
     * The allocation-free form of {@link #pin()}: adds a pin without a {@link Pin} object, for data paths that keep
     * their pins in preallocated slots (e.g. the memory regions of an in-flight work request). Every successful call
     * must be matched by exactly one {@link #removePin()}.
     *
     * @throws ResourceClosedException if the handle is closed
     */
    public void addPin() {
        node.pin();
    }

    /** Removes a pin added by {@link #addPin()}; destroys the resource if it was closed and this was its last pin. */
    public void removePin() {
        node.unpin();
    }

    /**
     * Attaches a child that depends on this resource only. See {@link ResourceGraph#create} for the contract.
     */
    public Resource createChild(String kind, String description, DestroyAction onDestroy) {
        return node.graph.create(kind, description, onDestroy, this);
    }

    /**
     * Closes the handle. The native destroy runs now if there are no live children and no pins, otherwise when
     * the last of them goes ({@link ClosePolicy#DEFERRED}); under {@link ClosePolicy#STRICT} live children make
     * this throw instead and the handle stays open. Idempotent.
     *
     * @throws ResourceBusyException  under STRICT, naming the live children
     * @throws DestroyFailedException if a destroy that this close triggered failed (this one or a closed
     *                                parent's); the handle is closed regardless
     */
    @Override
    public void close() {
        try {
            node.close(node.graph.policy() == ClosePolicy.STRICT);
        } finally {
            disarmIfClosed();
        }
    }

    /**
     * Closes this resource and every resource that depends on it, directly or not, whatever the policy; each is
     * destroyed after its children. Handles held elsewhere in the subtree become closed.
     *
     * @throws DestroyFailedException if any destroy failed; the rest of the subtree is still closed
     */
    public void closeTree() {
        try {
            node.closeTree();
        } finally {
            disarmIfClosed();
        }
    }

    /** Unregisters the leak detector once the handle is closed, so an explicit close is never reported. */
    private void disarmIfClosed() {
        if (node.state() != ResourceState.OPEN) cleanable.clean();
    }

    @Override
    public String toString() {
        return node.toString();
    }
}
