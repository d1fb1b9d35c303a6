package io.mooring.lifecycle;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.Deque;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The graph's record of one native object. It outlives its {@link Resource} handle (the Cleaner needs it after
 * the handle is gone), so it never references the handle.
 *
 * <p>Two pieces of state:
 * <ul>
 *   <li>{@link #pinWord}, touched lock-free on the data path: bit 0 is set once the handle is closed, the rest
 *       counts pins ({@link #PIN} per pin). A pin is one {@code getAndAdd}; if it finds the closed bit it is
 *       undone, so no pin is ever granted after close.</li>
 *   <li>the life state, children and {@code destroying} flag, guarded by {@link #lock}: creation, close and
 *       destroy are control-path operations.</li>
 * </ul>
 * The destroy runs exactly once: whoever finds the node CLOSING with no children and no pins claims it under
 * the lock ({@link #claimDestroy()}), runs the action outside any lock, then detaches from its parents and
 * offers each of them the same check. Every path that can make a node destroyable ends with that check
 * ({@link #settle}): close, the last unpin, the last child's destroy.
 */
final class Node {
    private static final long CLOSED = 1;
    private static final long PIN = 2;
    private static final VarHandle PIN_WORD;

    static {
        try {
            PIN_WORD = MethodHandles.lookup().findVarHandle(Node.class, "pinWord", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final ResourceGraph graph;
    final String kind;
    final long id;
    final String description;
    final List<Node> parents;
    private final List<StackTraceElement> creationSite;
    private final DestroyAction action;

    private final ReentrantLock lock = new ReentrantLock();
    private Set<Node> children; // made with the first child and dropped with the last: most nodes have none
    private volatile ResourceState state = ResourceState.OPEN;
    private boolean destroying;
    private Throwable failureCause; // set while FAILED
    @SuppressWarnings("unused") // accessed through PIN_WORD
    private volatile long pinWord;

    Node(ResourceGraph graph, String kind, long id, String description, List<Node> parents,
         List<StackTraceElement> creationSite, DestroyAction action) {
        this.graph = graph;
        this.kind = kind;
        this.id = id;
        this.description = description;
        this.parents = parents;
        this.creationSite = creationSite;
        this.action = action;
    }

    String name() {
        return kind + "#" + id;
    }

    ResourceState state() {
        return state;
    }

    long pins() {
        return pinWord >>> 1;
    }

    ResourceInfo info() {
        return new ResourceInfo(kind, id, description, state, pins(), creationSite);
    }

    ResourceClosedException closedError(String operation) {
        return new ResourceClosedException(info(), "cannot " + operation + ": " + name() + " is " + stateWord());
    }

    private String stateWord() {
        return state.name().toLowerCase(java.util.Locale.ROOT);
    }

    // ---- creation -------------------------------------------------------------------------------------------

    /**
     * Adds this node under all its parents atomically: either every parent is open and lists it as a child, or
     * none does and the creation fails naming the closed parent. Parents are locked in id order so concurrent
     * creations under overlapping parents cannot deadlock.
     */
    void attachToParents() {
        Node[] ordered = parents.stream().sorted(Comparator.comparingLong(n -> n.id)).toArray(Node[]::new);
        int locked = 0;
        try {
            for (Node p : ordered) {
                p.lock.lock();
                locked++;
                if (p.state != ResourceState.OPEN) {
                    throw new ResourceClosedException(p.info(),
                            "cannot create " + kind + " under " + p.name() + ": " + p.name() + " is " + p.stateWord());
                }
            }
            for (Node p : ordered) p.addChild(this);
        } finally {
            for (int i = locked - 1; i >= 0; i--) ordered[i].lock.unlock();
        }
    }

    // ---- pins (lock-free: on the data path) -----------------------------------------------------------------

    void pin() {
        long before = (long) PIN_WORD.getAndAdd(this, PIN);
        if ((before & CLOSED) != 0) {
            unpin();
            throw closedError("pin");
        }
    }

    void unpin() {
        long after = (long) PIN_WORD.getAndAdd(this, -PIN) - PIN;
        if (after < 0) {
            PIN_WORD.getAndAdd(this, PIN);
            throw new IllegalStateException("unpin of " + name() + " without a matching pin");
        }
        if (after == CLOSED) {
            // Last pin of a closed node: destroy it now. The data path does not throw for a failed destroy;
            // the failure is reported through the listeners and ResourceGraph.failures().
            settle(this);
        }
    }

    // ---- close ----------------------------------------------------------------------------------------------

    /**
     * Closes the handle and destroys what became destroyable.
     *
     * @param strict throw {@link ResourceBusyException} instead of deferring when children are alive
     * @return false if it was already closed
     */
    boolean close(boolean strict) {
        if (!markClosing(strict)) return false;
        throwIfFailed(settle(this));
        return true;
    }

    /**
     * Closes this node and every descendant (top-down, so nothing new can be created under them meanwhile),
     * then destroys them leaves-first.
     */
    void closeTree() {
        List<Node> closed = new ArrayList<>();
        Set<Node> seen = new LinkedHashSet<>();
        Deque<Node> todo = new ArrayDeque<>(List.of(this));
        while (!todo.isEmpty()) {
            Node n = todo.pop();
            if (!seen.add(n)) continue;
            if (n.markClosing(false)) closed.add(n);
            todo.addAll(n.liveChildren());
        }
        List<DestroyFailure> failures = new ArrayList<>();
        for (Node n : closed.reversed()) failures.addAll(settle(n));
        throwIfFailed(failures);
    }

    /** OPEN → CLOSING, setting the closed bit so that no further pin succeeds. */
    private boolean markClosing(boolean strict) {
        lock.lock();
        try {
            if (state != ResourceState.OPEN) return false;
            if (strict && children != null) {
                throw new ResourceBusyException(info(), children.stream().map(Node::info).toList());
            }
            state = ResourceState.CLOSING;
            PIN_WORD.getAndBitwiseOr(this, CLOSED);
        } finally {
            lock.unlock();
        }
        graph.fireClosed(this);
        return true;
    }

    /** Closes this node because its handle became unreachable while open. Runs on the housekeeper's thread. */
    void reapLeaked() {
        if (state != ResourceState.OPEN) return;
        graph.reportLeak(this);
        if (markClosing(false)) settle(this);
    }

    // ---- destroy --------------------------------------------------------------------------------------------

    /**
     * Destroys {@code start} if it is destroyable, then each parent that thereby became destroyable, and so on
     * up. Iterative: a deep graph cannot overflow the stack.
     *
     * @return the failures that happened on the way (also reported to listeners)
     */
    static List<DestroyFailure> settle(Node start) {
        List<DestroyFailure> failures = List.of();
        Deque<Node> todo = new ArrayDeque<>(List.of(start));
        while (!todo.isEmpty()) {
            Node n = todo.pop();
            if (!n.claimDestroy()) continue;
            Throwable error = n.runAction();
            if (error == null) {
                n.finish(ResourceState.DESTROYED);
                todo.addAll(n.parents);
            } else {
                if (failures.isEmpty()) failures = new ArrayList<>();
                failures.add(n.fail(error));
            }
        }
        return failures;
    }

    private boolean claimDestroy() {
        lock.lock();
        try {
            if (state != ResourceState.CLOSING || destroying || children != null || pinWord != CLOSED) return false;
            destroying = true;
            return true;
        } finally {
            lock.unlock();
        }
    }

    private Throwable runAction() {
        try {
            action.destroy();
            return null;
        } catch (Throwable t) {
            return t;
        }
    }

    /** Marks the node DESTROYED or ABANDONED and removes it from its parents and from the graph. */
    private void finish(ResourceState end) {
        lock.lock();
        try {
            state = end;
            destroying = false;
        } finally {
            lock.unlock();
        }
        for (Node p : parents) p.removeChild(this);
        graph.forget(this);
    }

    private DestroyFailure fail(Throwable error) {
        lock.lock();
        try {
            state = ResourceState.FAILED;
            destroying = false;
            failureCause = error;
        } finally {
            lock.unlock();
        }
        DestroyFailure failure = new DestroyFailure(this, error);
        graph.reportFailure(this, error);
        return failure;
    }

    /** The current failure, or null unless FAILED. */
    DestroyFailure failure() {
        lock.lock();
        try {
            return state == ResourceState.FAILED ? new DestroyFailure(this, failureCause) : null;
        } finally {
            lock.unlock();
        }
    }

    void retryDestroy() {
        moveFrom(ResourceState.FAILED, ResourceState.CLOSING, "retry");
        throwIfFailed(settle(this));
    }

    void abandon() {
        moveFrom(ResourceState.FAILED, ResourceState.ABANDONED, "abandon");
        graph.reportAbandoned(this);
        finish(ResourceState.ABANDONED);
        List<DestroyFailure> failures = new ArrayList<>();
        for (Node p : parents) failures.addAll(settle(p));
        throwIfFailed(failures);
    }

    private void moveFrom(ResourceState expected, ResourceState next, String operation) {
        lock.lock();
        try {
            if (state != expected) {
                throw new IllegalStateException("cannot " + operation + " " + name() + ": it is " + stateWord()
                        + ", not " + expected.name().toLowerCase(java.util.Locale.ROOT));
            }
            state = next;
        } finally {
            lock.unlock();
        }
    }

    private static void throwIfFailed(List<DestroyFailure> failures) {
        if (!failures.isEmpty()) throw new DestroyFailedException(failures);
    }

    // ---- children -------------------------------------------------------------------------------------------

    /** Caller holds {@link #lock}. */
    private void addChild(Node child) {
        if (children == null) children = new LinkedHashSet<>();
        children.add(child);
    }

    private void removeChild(Node child) {
        lock.lock();
        try {
            if (children != null && children.remove(child) && children.isEmpty()) children = null;
        } finally {
            lock.unlock();
        }
    }

    List<Node> liveChildren() {
        lock.lock();
        try {
            return children == null ? new ArrayList<>() : new ArrayList<>(children);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public String toString() {
        return name() + (description.isEmpty() ? "" : " (" + description + ")") + " " + state
                + (pins() > 0 ? ", " + pins() + (pins() == 1 ? " pin" : " pins") : "")
                + (creationSite.isEmpty() ? "" : " created at " + info().createdAt());
    }

    /** The current stack without the graph's own frames, so that it starts where the caller asked. */
    static List<StackTraceElement> captureSite() {
        StackTraceElement[] stack = new Throwable().getStackTrace();
        int first = 0;
        while (first < stack.length && isGraphFrame(stack[first])) first++;
        return Arrays.asList(stack).subList(first, stack.length);
    }

    private static boolean isGraphFrame(StackTraceElement frame) {
        String c = frame.getClassName();
        return c.equals(Node.class.getName()) || c.equals(ResourceGraph.class.getName())
                || c.equals(Resource.class.getName());
    }
}
