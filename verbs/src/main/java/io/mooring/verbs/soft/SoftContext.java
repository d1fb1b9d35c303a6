package io.mooring.verbs.soft;

import io.mooring.verbs.Errno;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.spi.AsyncEventSink;
import io.mooring.verbs.spi.ContextOps;
import io.mooring.verbs.spi.CqOps;
import io.mooring.verbs.spi.PdOps;
import io.mooring.verbs.testing.FaultOps;
import io.mooring.verbs.testing.FaultPlan;
import io.mooring.verbs.values.DeviceInfo;
import io.mooring.verbs.values.PortAttributes;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/** An open soft device. */
final class SoftContext implements ContextOps {
    final SoftDevice device;
    private final DeviceInfo info;
    /**
     * Live PDs and CQs; closing with any left fails with EBUSY. Like every child count of the soft provider, this is
     * the NIC's own reference count (the kernel's {@code usecnt}), kept apart from the lifecycle graph on purpose: it
     * is what checks the graph. Tests close through the graph, and a destroy the graph ran too early meets EBUSY here
     * as on a NIC; asked of the graph, the check would be circular. It also stays true for a child whose failed
     * destroy was abandoned (the graph released its parents; the object still exists).
     */
    final AtomicInteger children = new AtomicInteger();
    private DeviceFaults faults; // guarded by this
    /** Where the soft NIC raises async events, as a NIC writes them to the context's async fd. */
    final AsyncEventSink events;

    SoftContext(SoftDevice device, AsyncEventSink events) {
        this.device = device;
        this.info = device.info();
        this.events = events;
    }

    @Override
    public DeviceInfo device() {
        return info;
    }

    @Override
    public PortAttributes queryPort(int port) {
        if (port != 1) {
            throw new VerbsException("ibv_query_port", Errno.EINVAL.number(), device.name, "it has port 1 only");
        }
        return device.port();
    }

    @Override
    public PdOps allocatePd() {
        children.incrementAndGet();
        return new SoftPd(this, device.newObjectId());
    }

    @Override
    public CqOps createCq(int capacity) {
        children.incrementAndGet();
        return new SoftCq(this, device.newObjectId(), capacity);
    }

    /**
     * Injects {@code plan} into this context's QPs, in the order of their numbers, and into those it creates later.
     * Nothing is injected if one of them has faults already.
     */
    @Override
    public synchronized FaultOps injectFaults(FaultPlan plan) {
        if (faults != null && !faults.isStopped()) {
            throw new IllegalStateException(device.name + " has faults injected already; close that FaultInjection first");
        }
        List<SoftQp> qps = device.qps().stream().filter(qp -> qp.belongsTo(this))
                .sorted(Comparator.comparingInt(SoftQp::qpNumber)).toList();
        var injection = new DeviceFaults(plan);
        try {
            for (SoftQp qp : qps) injection.adopt(qp);
        } catch (IllegalStateException e) {
            injection.stop();
            throw e;
        }
        faults = injection;
        return injection;
    }

    /** A QP created on this context gets the faults injected into it, if any. */
    synchronized void created(SoftQp qp) {
        if (faults != null) faults.adopt(qp);
    }

    @Override
    public void close() {
        if (children.get() > 0) {
            throw new VerbsException("ibv_close_device", Errno.EBUSY.number(), device.name,
                    children.get() + " protection domains or completion queues are still open");
        }
    }
}
