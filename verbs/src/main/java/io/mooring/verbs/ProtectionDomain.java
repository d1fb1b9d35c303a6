package io.mooring.verbs;

import io.mooring.lifecycle.Resource;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.spi.PdOps;
import io.mooring.verbs.spi.SrqOps;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.SrqAttributes;
import java.lang.foreign.MemorySegment;
import java.util.Set;

/**
 * A protection domain ({@code struct ibv_pd}): memory regions, windows and queue pairs in it can reach each
 * other, and nothing else can. Its destroy waits for all of them.
 */
public final class ProtectionDomain extends VerbsObject {
    private final DeviceContext context;
    private final PdOps ops;
    /** Bound windows by rkey, so that a LOCAL_INV posted on any QP of this PD can find its window. */
    final RkeyTable windowsByRkey = new RkeyTable();

    ProtectionDomain(DeviceContext context, PdOps ops, Resource resource) {
        super(resource);
        this.context = context;
        this.ops = ops;
    }

    public DeviceContext context() {
        return context;
    }

    /**
     * Registers native memory for RDMA ({@code ibv_reg_mr}). Lengths are 64-bit.
     *
     * @throws IllegalArgumentException if the segment is on the heap (the GC moves it), empty, larger than the
     *                                  device's max MR size, read-only with LOCAL_WRITE (and so with remote write
     *                                  or atomic rights), or the rights are inconsistent
     * @throws IllegalStateException    if the segment's arena is closed (its memory is freed)
     * @throws VerbsException           if the device refuses (e.g. ENOMEM: the locked-memory limit)
     */
    public MemoryRegion register(MemorySegment segment, Set<Access> access) {
        return register(segment, access, new Resource[0]);
    }

    /**
     * Registers memory that {@code memoryOwner} releases (e.g. an {@code munmap}): the region becomes a child of
     * the owner too, so the memory is released only after it was deregistered and no request uses it.
     */
    public MemoryRegion register(MemorySegment segment, Set<Access> access, Resource memoryOwner) {
        return register(segment, access, new Resource[] {memoryOwner});
    }

    private MemoryRegion register(MemorySegment segment, Set<Access> access, Resource[] owners) {
        resource.checkOpen();
        if (!segment.isNative()) {
            throw new IllegalArgumentException("cannot register a heap segment (" + segment.byteSize() + " bytes): the"
                    + " garbage collector moves heap memory; allocate it with an Arena or Mooring's RdmaArena");
        }
        if (!segment.scope().isAlive()) {
            throw new IllegalStateException("cannot register " + segment.byteSize() + " bytes at 0x"
                    + Long.toHexString(segment.address()) + ": its arena is closed, so the memory is freed and the NIC"
                    + " would reach whatever is allocated there next; register memory while its arena is open");
        }
        long max = context.device().attributes().maxMrSize();
        if (segment.byteSize() == 0 || segment.byteSize() > max) {
            throw new IllegalArgumentException("cannot register " + segment.byteSize() + " bytes: a memory region"
                    + " holds 1 to " + max + " bytes on " + context.device());
        }
        Access.requireConsistent(access, "a memory region");
        if (segment.isReadOnly() && access.contains(Access.LOCAL_WRITE)) {
            throw new IllegalArgumentException("cannot register a read-only segment of " + segment.byteSize()
                    + " bytes with " + access + ": LOCAL_WRITE lets the NIC write it (ibv_reg_mr fails with EFAULT on"
                    + " read-only memory); register it for reading only (REMOTE_READ, no write rights)");
        }
        int mask = Access.mask(access);
        var made = Attach.make("mr", () -> ops.register(segment, mask),
                mr -> "addr=0x" + Long.toHexString(segment.address()) + " len=" + segment.byteSize()
                        + " lkey=0x" + Integer.toHexString(mr.lkey()),
                mr -> mr::deregister, parents(owners));
        return new MemoryRegion(this, made.ops(), made.resource(), segment, Set.copyOf(access));
    }

    /**
     * Allocates a memory window ({@code ibv_alloc_mw}).
     *
     * @throws VerbsException with EOPNOTSUPP if the device does not support that window type
     */
    public MemoryWindow allocateWindow(MwType type) {
        resource.checkOpen();
        if (!context.device().attributes().windowTypes().contains(type)) {
            throw new VerbsException("ibv_alloc_mw", Errno.EOPNOTSUPP.number(), resource.info().name(),
                    context.device() + " supports memory windows of types " + context.device().attributes().windowTypes()
                            + " only");
        }
        var state = new MemoryWindow.State(windowsByRkey);
        var made = Attach.make("mw", () -> ops.allocateMw(type), mw -> type.name().toLowerCase(java.util.Locale.ROOT),
                mw -> () -> {
                    mw.deallocate();
                    state.deallocated();
                }, resource);
        state.initialKey(made.ops().rkey());
        return new MemoryWindow(this, made.ops(), made.resource(), type, state);
    }

    /**
     * Creates a reliable-connected queue pair ({@code ibv_create_qp}) in RESET.
     *
     * @throws IllegalArgumentException if a CQ belongs to another device or the capabilities exceed the device's
     */
    public QueuePair createQueuePair(CompletionQueue sendCq, CompletionQueue recvCq, QpCapabilities capabilities) {
        return createQueuePair(sendCq, recvCq, capabilities, null);
    }

    /**
     * Creates a reliable-connected queue pair whose receives come from {@code srq} (when not null): it has no
     * receive queue of its own, so the receive capabilities are not used. The QP is a child of the SRQ too.
     *
     * @throws IllegalArgumentException if a CQ or the SRQ belongs to another device context, or the capabilities
     *                                  exceed the device's
     */
    public QueuePair createQueuePair(CompletionQueue sendCq, CompletionQueue recvCq, QpCapabilities capabilities,
                                     SharedReceiveQueue srq) {
        resource.checkOpen();
        for (CompletionQueue cq : new CompletionQueue[] {sendCq, recvCq}) {
            if (cq.context() != context) {
                throw new IllegalArgumentException(cq + " belongs to " + cq.context() + ", not to " + context);
            }
        }
        if (srq != null && srq.pd().context() != context) {
            throw new IllegalArgumentException(srq + " belongs to " + srq.pd().context() + ", not to " + context
                    + ": a QP takes receives only from a shared receive queue of its own device context");
        }
        capabilities.requireWithin(context.device().attributes());
        var queues = new QpQueues(new InFlight("send", false, capabilities.maxSendWr()),
                srq != null ? srq.slots() : new InFlight("receive", true, capabilities.maxRecvWr()), srq != null,
                sendCq.router(), recvCq.router());
        Resource[] parents = srq == null ? new Resource[] {resource, sendCq.resource(), recvCq.resource()}
                : new Resource[] {resource, sendCq.resource(), recvCq.resource(), srq.resource()};
        var made = Attach.make("qp", () -> ops.createQp(sendCq.router().ops, recvCq.router().ops, capabilities,
                        srq == null ? null : srq.ops()),
                qp -> srq == null ? "qpn=" + qp.qpNumber() : "qpn=" + qp.qpNumber() + " on " + srq,
                qp -> QpQueues.destroyAction(qp, queues, context.queuePairs), parents);
        return new QueuePair(this, made.ops(), made.resource(), sendCq, recvCq, capabilities, queues, srq);
    }

    /**
     * Creates a shared receive queue ({@code ibv_create_srq}) for up to {@link SrqAttributes#maxWr()} receives of
     * {@link SrqAttributes#maxSge()} entries each, armed at its {@link SrqAttributes#limit()}
     * ({@link SharedReceiveQueue#arm}; 0: not armed).
     *
     * @throws IllegalArgumentException if a size exceeds the device's ({@code max_srq_wr}, {@code max_srq_sge})
     */
    public SharedReceiveQueue createSharedReceiveQueue(SrqAttributes attributes) {
        resource.checkOpen();
        SharedReceiveQueue.requireWithin(context.device().attributes(), attributes);
        int maxWr = attributes.maxWr();
        int maxSge = attributes.maxSge();
        int limit = attributes.limit();
        var slots = new SrqInFlight("srq", maxWr, context.sharedQueues);
        var events = new SharedReceiveQueue.LimitEvents("srq on " + this);
        Attach.Made<SrqOps> made;
        try {
            made = Attach.make("srq", () -> ops.createSrq(maxWr, maxSge, events), srq -> "max_wr=" + maxWr
                    + " max_sge=" + maxSge, srq -> SharedReceiveQueue.destroyAction(srq, slots), resource);
        } catch (RuntimeException e) {
            slots.discardAll(new ResourceClosedException("its creation failed"), true); // leaves the context's table
            throw e;
        }
        slots.name(made.resource().info().name());
        var srq = new SharedReceiveQueue(this, made.ops(), made.resource(), slots, maxSge, events);
        if (limit > 0) {
            try {
                srq.arm(limit);
            } catch (RuntimeException e) {
                srq.close();
                throw e;
            }
        }
        return srq;
    }

    private Resource[] parents(Resource[] owners) {
        Resource[] all = new Resource[owners.length + 1];
        all[0] = resource;
        System.arraycopy(owners, 0, all, 1, owners.length);
        return all;
    }

}
