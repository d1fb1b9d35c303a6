package io.mooring.verbs;

import io.mooring.lifecycle.Resource;
import io.mooring.verbs.spi.ContextOps;
import io.mooring.verbs.testing.FaultInjection;
import io.mooring.verbs.testing.FaultPlan;
import io.mooring.verbs.values.DeviceInfo;
import io.mooring.verbs.values.Gid;
import io.mooring.verbs.values.PortAttributes;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * An open RDMA device ({@code struct ibv_context}), the root of its objects in the lifecycle graph:
 * {@code context ← PD ← MR/MW/QP} and {@code context ← CQ ← QP}. Closing it follows the graph's policy (by
 * default the device closes after its last object); {@code resource().closeTree()} closes everything on it.
 */
public final class DeviceContext extends VerbsObject {
    private final ContextOps ops;
    private final Map<Integer, PortAttributes> ports = new ConcurrentHashMap<>();
    /** Its queue pairs by number, for the completion routers of all its CQs. */
    final QpTable queuePairs = new QpTable();
    /** Its shared receive queues, by the index their receives' ids carry. */
    final SrqInFlight.Table sharedQueues = new SrqInFlight.Table();

    private final AsyncEvents events;

    DeviceContext(ContextOps ops, Resource resource, AsyncEvents events) {
        super(resource);
        this.ops = ops;
        this.events = events;
    }

    /**
     * Hands the device's async events ({@code ibv_get_async_event}: a CQ overrun, a fatal QP error, a port going
     * down) to {@code listener}, on a virtual thread, one at a time in the order they were raised; events while no
     * listener is set are dropped. Replaces the previous listener; null removes it.
     */
    public void onAsyncEvent(Consumer<AsyncEvent> listener) {
        events.listen(listener);
    }

    /** The device and its attributes. */
    public DeviceInfo device() {
        return ops.device();
    }

    /** A port's attributes and GID table (queried once, then cached). */
    public PortAttributes port(int port) {
        resource.checkOpen();
        int count = device().attributes().ports();
        if (port < 1 || port > count) {
            throw new IllegalArgumentException("port " + port + " does not exist on " + device() + " (ports 1.." + count + ")");
        }
        return ports.computeIfAbsent(port, ops::queryPort);
    }

    /**
     * The GID at {@code index} of {@code port}; index -1 picks the first IPv4-mapped GID (RoCE v2, what rxe
     * puts at index 1), else index 0.
     */
    Gid gid(int port, int index) {
        var gids = port(port).gids();
        if (index < 0) {
            return gids.stream().filter(Gid::isIpv4Mapped).findFirst().orElse(gids.isEmpty() ? Gid.ZERO : gids.getFirst());
        }
        if (index >= gids.size()) {
            throw new IllegalArgumentException("GID index " + index + " is outside the " + gids.size()
                    + "-entry GID table of port " + port + " of " + device());
        }
        return gids.get(index);
    }

    /** Allocates a protection domain ({@code ibv_alloc_pd}). */
    public ProtectionDomain allocateProtectionDomain() {
        var made = Attach.make("pd", ops::allocatePd, pd -> "on " + device().name(), pd -> pd::deallocate, resource);
        return new ProtectionDomain(this, made.ops(), made.resource());
    }

    /**
     * Creates a completion queue with room for {@code capacity} completions ({@code ibv_create_cq}).
     *
     * @throws IllegalArgumentException if capacity is not in [1, the device's max_cqe]
     */
    public CompletionQueue createCompletionQueue(int capacity) {
        int max = device().attributes().maxCqe();
        if (capacity < 1 || capacity > max) {
            throw new IllegalArgumentException("CQ capacity " + capacity + " is outside [1, " + max + "] (max_cqe of "
                    + device() + ")");
        }
        var dispatcher = new CompletionQueue.DispatcherSlot();
        var made = Attach.make("cq", () -> ops.createCq(capacity), cq -> "capacity=" + capacity, cq -> () -> {
            dispatcher.stop(); // its last polls drained the flushes of the QPs destroyed before
            cq.destroy();
            events.destroyed(cq);
        }, resource);
        var cq = new CompletionQueue(this, made.ops(), made.resource(), capacity, dispatcher);
        events.created(cq.router());
        return cq;
    }

    /**
     * Injects faults per {@code plan} into the traffic of every queue pair of this device context, those that exist
     * (in the order of their numbers) and those created later, each numbering its own packets and drawing from its
     * own generator, split in that order from the plan's seed. Soft provider only.
     *
     * @throws UnsupportedOperationException on a provider other than soft
     * @throws IllegalStateException if faults are injected into one of its queue pairs already
     */
    public FaultInjection injectFaults(FaultPlan plan) {
        Objects.requireNonNull(plan, "plan");
        resource.checkOpen();
        return new FaultInjection(ops.injectFaults(plan), plan, toString());
    }

    @Override
    public String toString() {
        return resource.info().name() + " " + device();
    }
}
