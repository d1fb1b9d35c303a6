package io.mooring.lifecycle;

import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A graph of native resources that makes wrong teardown impossible: a resource is destroyed exactly once,
 * only after every resource that depends on it and only when no pin holds it. It generalises what pyverbs
 * does per object (weak sets of children, closed in a fixed order) to any dependency graph, e.g. for RDMA
 * verbs: {@code context ← PD ← MR/MW/QP} and {@code context ← CQ ← QP}.
 *
 * <pre>{@code
 * var graph = ResourceGraph.builder().name("verbs").build();
 * Resource ctx = graph.create("context", "rxe0", () -> closeDevice(c));
 * Resource pd  = ctx.createChild("pd", "", () -> deallocPd(p));
 * Resource qp  = graph.create("qp", "qpn=17", () -> destroyQp(q), pd, cq);   // two parents
 * pd.close();   // DEFERRED: handle closed now, dealloc_pd runs after the QP is destroyed
 * }</pre>
 *
 * <p>Thread-safe: creation, close, closeTree and pins may race from any threads; the destroy order holds
 * under every interleaving. Destroy actions run on the thread whose call made the resource destroyable (the
 * closer, the last unpinner, the last child's destroyer, or the {@link Housekeeper}'s thread after a leak).
 */
public final class ResourceGraph implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ResourceGraph.class.getPackageName());

    private final String name;
    private final ClosePolicy policy;
    private final LeakDetection leakDetection;
    private final List<ResourceListener> listeners;
    private final AtomicLong ids = new AtomicLong();
    private final Map<Long, Node> live = new ConcurrentHashMap<>();

    private ResourceGraph(Builder b) {
        this.name = b.name;
        this.policy = b.policy;
        this.leakDetection = b.leakDetection != null ? b.leakDetection : LeakDetection.fromSystemProperty();
        this.listeners = List.copyOf(b.listeners);
    }

    /** A graph with the defaults: DEFERRED, leak detection from {@value LeakDetection#PROPERTY}, no listeners. */
    public static ResourceGraph create() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    public String name() {
        return name;
    }

    public ClosePolicy policy() {
        return policy;
    }

    public LeakDetection leakDetection() {
        return leakDetection;
    }

    /**
     * Attaches a native object that was just created, as a child of every resource in {@code parents} (none
     * makes it a root). Pin the parents while creating the native object; see {@link Resource}.
     *
     * @param kind        what it is, e.g. {@code "mr"}; names it in every message
     * @param description free text for messages and {@link #dump()}, e.g. {@code "len=65536"}
     * @param onDestroy   releases the native object; must not reference the returned handle
     * @throws ResourceClosedException  if a parent is closed or closing; {@code onDestroy} has then already
     *                                  run, so the native object is not leaked
     * @throws IllegalArgumentException if a parent belongs to another graph, or an argument is null or blank
     */
    public Resource create(String kind, String description, DestroyAction onDestroy, Resource... parents) {
        Objects.requireNonNull(onDestroy, "onDestroy");
        if (kind == null || kind.isBlank()) throw new IllegalArgumentException("resource kind must not be blank");
        // List.of keeps one or two parents without an array: every resource has two lists of its parents.
        List<Resource> parentHandles = List.of(Arrays.stream(parents).distinct().toArray(Resource[]::new));
        for (Resource p : parentHandles) {
            if (p.graph() != this) {
                throw new IllegalArgumentException("cannot create " + kind + " in graph '" + name + "' under "
                        + p.info().name() + " of graph '" + p.graph().name + "'");
            }
        }
        Node node = new Node(this, kind, ids.incrementAndGet(), description == null ? "" : description,
                List.of(parentHandles.stream().map(Resource::node).toArray(Node[]::new)),
                leakDetection == LeakDetection.PARANOID ? Node.captureSite() : List.of(), onDestroy);
        // Registered before attaching: once attached, a concurrent closeTree may destroy (and forget) it.
        live.put(node.id, node);
        try {
            node.attachToParents();
        } catch (ResourceClosedException e) {
            live.remove(node.id);
            undo(onDestroy, e);
            throw e;
        }
        fire(l -> l.created(node.info()));
        return new Resource(node, parentHandles, Housekeeper.shared());
    }

    private static void undo(DestroyAction onDestroy, Exception reason) {
        try {
            onDestroy.destroy();
        } catch (Throwable t) {
            reason.addSuppressed(t);
        }
    }

    /** How many resources are not yet destroyed (open, closing or failed). */
    public int liveCount() {
        return live.size();
    }

    /** The resources whose destroy failed and that were neither retried successfully nor abandoned. */
    public List<DestroyFailure> failures() {
        return live.values().stream().sorted(Comparator.comparingLong(n -> n.id))
                .map(Node::failure).filter(Objects::nonNull).toList();
    }

    /**
     * The live graph as an indented tree, roots first, children indented under each parent; a resource with
     * several parents is shown in full once and referenced under the others.
     */
    public String dump() {
        List<Node> nodes = live.values().stream().sorted(Comparator.comparingLong(n -> n.id)).toList();
        var out = new StringBuilder("resource graph '").append(name).append("': ").append(nodes.size())
                .append(" live (").append(policy).append(", leak detection ").append(leakDetection).append(")\n");
        Map<Node, Node> shownUnder = new HashMap<>();
        for (Node n : nodes) {
            if (n.parents.isEmpty()) dump(n, null, 1, shownUnder, out);
        }
        return out.toString();
    }

    private static void dump(Node n, Node parent, int depth, Map<Node, Node> shownUnder, StringBuilder out) {
        out.append("  ".repeat(depth));
        if (shownUnder.containsKey(n)) {
            out.append("-> ").append(n.name()).append(" (shown under ").append(shownUnder.get(n).name()).append(")\n");
            return;
        }
        shownUnder.put(n, parent);
        out.append(n).append('\n');
        n.liveChildren().stream().sorted(Comparator.comparingLong(c -> c.id))
                .forEach(c -> dump(c, n, depth + 1, shownUnder, out));
    }

    /**
     * Closes every resource in the graph with {@link Resource#closeTree()} semantics: each is destroyed after
     * its children (or when its last pin goes).
     *
     * @throws DestroyFailedException if any destroy failed
     */
    @Override
    public void close() {
        List<DestroyFailure> failures = new ArrayList<>();
        live.values().stream().filter(n -> n.parents.isEmpty()).sorted(Comparator.comparingLong(n -> n.id))
                .forEach(root -> {
                    try {
                        root.closeTree();
                    } catch (DestroyFailedException e) {
                        failures.addAll(e.failures());
                    }
                });
        if (!failures.isEmpty()) throw new DestroyFailedException(failures);
    }

    @Override
    public String toString() {
        return "ResourceGraph[" + name + ", " + live.size() + " live]";
    }

    // ---- notifications from nodes ---------------------------------------------------------------------------

    void fireClosed(Node n) {
        fire(l -> l.closed(n.info()));
    }

    void forget(Node n) {
        live.remove(n.id);
        if (n.state() == ResourceState.DESTROYED) fire(l -> l.destroyed(n.info()));
    }

    void reportLeak(Node n) {
        ResourceInfo info = n.info();
        fire(l -> l.leaked(info));
        if (leakDetection == LeakDetection.OFF) return;
        String message = "LEAK: " + info + " became unreachable without close(); destroying it on the housekeeper's thread";
        if (info.creationSite().isEmpty()) {
            LOG.log(Level.WARNING, message + ". Run with -D" + LeakDetection.PROPERTY
                    + "=paranoid to record where it was created.");
        } else {
            LOG.log(Level.WARNING, message, creationTrace(info));
        }
    }

    void reportFailure(Node n, Throwable cause) {
        ResourceInfo info = n.info();
        fire(l -> l.destroyFailed(info, cause));
        LOG.log(Level.ERROR, "destroy of " + info + " failed: " + cause + "; it stays FAILED and keeps its parents"
                + " alive until retried or abandoned (ResourceGraph.failures())", cause);
    }

    void reportAbandoned(Node n) {
        LOG.log(Level.ERROR, "abandoned " + n.info() + " after a failed destroy: its native object is leaked");
    }

    private static Throwable creationTrace(ResourceInfo info) {
        var site = new Throwable(info.name() + " was created here");
        site.setStackTrace(info.creationSite().toArray(StackTraceElement[]::new));
        return site;
    }

    private void fire(java.util.function.Consumer<ResourceListener> event) {
        for (ResourceListener l : listeners) {
            try {
                event.accept(l);
            } catch (Throwable t) {
                LOG.log(Level.WARNING, "resource listener " + l + " threw; ignored", t);
            }
        }
    }

    /** Configures a graph. */
    public static final class Builder {
        private String name = "mooring";
        private ClosePolicy policy = ClosePolicy.DEFERRED;
        private LeakDetection leakDetection;
        private final List<ResourceListener> listeners = new ArrayList<>();

        private Builder() {}

        /** Names the graph in messages and dumps (default {@code "mooring"}). */
        public Builder name(String name) {
            this.name = Objects.requireNonNull(name, "name");
            return this;
        }

        /** What close does with live children (default DEFERRED). */
        public Builder policy(ClosePolicy policy) {
            this.policy = Objects.requireNonNull(policy, "policy");
            return this;
        }

        /** Overrides the {@value LeakDetection#PROPERTY} system property. */
        public Builder leakDetection(LeakDetection level) {
            this.leakDetection = Objects.requireNonNull(level, "level");
            return this;
        }

        /** Adds a listener for create, close, destroy, leak and failure. */
        public Builder listener(ResourceListener listener) {
            listeners.add(Objects.requireNonNull(listener, "listener"));
            return this;
        }

        /**
         * @throws IllegalArgumentException if leak detection was not set and {@value LeakDetection#PROPERTY}
         *                                  names no level
         */
        public ResourceGraph build() {
            return new ResourceGraph(this);
        }
    }
}
