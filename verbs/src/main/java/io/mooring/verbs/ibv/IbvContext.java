package io.mooring.verbs.ibv;

import static io.mooring.verbs.ibv.IbvCalls.callAddress;
import static io.mooring.verbs.ibv.IbvCalls.callInt;
import static io.mooring.verbs.ibv.IbvProvider.errnoOf;
import static io.mooring.verbs.ibv.IbvStructs.offsetOf;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.mooring.verbs.VerbsException;
import io.mooring.verbs.spi.AsyncEventSink;
import io.mooring.verbs.spi.ContextOps;
import io.mooring.verbs.spi.CqOps;
import io.mooring.verbs.spi.PdOps;
import io.mooring.verbs.values.DeviceAttributes;
import io.mooring.verbs.values.DeviceInfo;
import io.mooring.verbs.values.Gid;
import io.mooring.verbs.values.Mtu;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.PortAttributes;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An open device ({@code struct ibv_context}). Reads the static-inline verbs' function pointers out of
 * {@code ctx->ops} once, so that every object made from it calls the driver directly, and runs the async event
 * reader ({@link IbvAsyncEvents}).
 */
@SuppressWarnings("restricted") // reads structs at the pointers libibverbs returns; native access is this module's
final class IbvContext implements ContextOps {
    /** GID table entries read per port at most (rxe has 1024 slots, nearly all empty). */
    private static final int MAX_GIDS = 256;
    /** The scan of a GID table stops after this many empty slots in a row past the last used one. */
    private static final int EMPTY_GIDS_TO_STOP = 16;
    /** Inline sizes tried, largest first, to learn the device's limit (ibv_device_attr does not carry it). */
    private static final int[] INLINE_PROBES = {1024, 512, 256, 128, 64, 32, 0};
    private static final Map<String, Integer> MAX_INLINE = new ConcurrentHashMap<>();

    final MemorySegment ctx;
    final String name;
    private final DeviceInfo info;
    // ctx->ops: the static inline verbs
    final MemorySegment allocMw;
    final MemorySegment bindMw;
    final MemorySegment deallocMw;
    final MemorySegment pollCq;
    final MemorySegment reqNotifyCq;
    final MemorySegment postSend;
    final MemorySegment postRecv;
    final MemorySegment postSrqRecv;
    /** Live SRQs by the address of their {@code struct ibv_srq}, which an async event names. */
    final Map<Long, IbvSrq> srqs = new ConcurrentHashMap<>();
    /** Live CQs by the address of their {@code struct ibv_cq}, which a CQ event names. */
    final Map<Long, IbvCq> cqs = new ConcurrentHashMap<>();
    /** Where the async event reader reports each event. */
    final AsyncEventSink sink;
    private final IbvAsyncEvents events;

    IbvContext(MemorySegment ctx, String name, AsyncEventSink sink) {
        this.ctx = ctx;
        this.name = name;
        this.sink = sink;
        this.allocMw = ctx.get(ADDRESS, IbvStructs.CONTEXT_OPS_ALLOC_MW);
        this.bindMw = ctx.get(ADDRESS, IbvStructs.CONTEXT_OPS_BIND_MW);
        this.deallocMw = ctx.get(ADDRESS, IbvStructs.CONTEXT_OPS_DEALLOC_MW);
        this.pollCq = ctx.get(ADDRESS, IbvStructs.CONTEXT_OPS_POLL_CQ);
        this.reqNotifyCq = ctx.get(ADDRESS, IbvStructs.CONTEXT_OPS_REQ_NOTIFY_CQ);
        this.postSend = ctx.get(ADDRESS, IbvStructs.CONTEXT_OPS_POST_SEND);
        this.postRecv = ctx.get(ADDRESS, IbvStructs.CONTEXT_OPS_POST_RECV);
        this.postSrqRecv = ctx.get(ADDRESS, IbvStructs.CONTEXT_OPS_POST_SRQ_RECV);
        for (MemorySegment op : new MemorySegment[] {pollCq, reqNotifyCq, postSend, postRecv}) {
            if (op.equals(MemorySegment.NULL)) {
                throw new VerbsException("ibv_open_device", 0, name, "the driver left a data-path verb of ctx->ops"
                        + " empty; it cannot be used through the legacy verbs API");
            }
        }
        this.info = describe(ctx, name);
        this.events = new IbvAsyncEvents(this);
    }

    @Override
    public DeviceInfo device() {
        return info;
    }

    @Override
    public PortAttributes queryPort(int port) {
        return queryPort(ctx, name, port);
    }

    @Override
    public PdOps allocatePd() {
        MemorySegment pd = callAddress(Ibv.ALLOC_PD, Ibv.errnoState(), ctx);
        if (pd.equals(MemorySegment.NULL)) throw IbvErrors.fail("ibv_alloc_pd", Ibv.errno(), name);
        return new IbvPd(this, pd.reinterpret(IbvStructs.PD.byteSize()));
    }

    @Override
    public CqOps createCq(int capacity) {
        return new IbvCq(this, capacity);
    }

    @Override
    public void close() {
        events.stop(); // out of native code before the context goes
        IbvProvider.closeDevice(ctx, name);
    }

    // ---- describing a device ----------------------------------------------------------------------------------

    /** The device's attributes and ports, as {@code devices()} and {@code device()} report them. */
    static DeviceInfo describe(MemorySegment ctx, String name) {
        DeviceAttributes attributes;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(IbvStructs.DEVICE_ATTR);
            int rc = callInt(Ibv.QUERY_DEVICE, Ibv.errnoState(), ctx, attr);
            if (rc != 0) throw IbvErrors.fail("ibv_query_device", errnoOf(rc), name);
            int capFlags = deviceInt(attr, "device_cap_flags");
            Set<MwType> windows = EnumSet.noneOf(MwType.class);
            if (deviceInt(attr, "max_mw") > 0) {
                if ((capFlags & IbvStructs.IBV_DEVICE_MEM_WINDOW) != 0) windows.add(MwType.TYPE_1);
                if ((capFlags & (IbvStructs.IBV_DEVICE_MEM_WINDOW_TYPE_2A | IbvStructs.IBV_DEVICE_MEM_WINDOW_TYPE_2B)) != 0) {
                    windows.add(MwType.TYPE_2);
                }
            }
            long maxMr = attr.get(JAVA_LONG, offsetOf(IbvStructs.DEVICE_ATTR, "max_mr_size"));
            attributes = DeviceAttributes.builder().maxMrSize(maxMr < 0 ? Long.MAX_VALUE : maxMr)
                    .maxQp(deviceInt(attr, "max_qp")).maxQpWr(deviceInt(attr, "max_qp_wr"))
                    .maxSge(deviceInt(attr, "max_sge")).maxCq(deviceInt(attr, "max_cq"))
                    .maxCqe(deviceInt(attr, "max_cqe")).maxMr(deviceInt(attr, "max_mr"))
                    .maxMw(deviceInt(attr, "max_mw"))
                    .maxQpRdAtom(deviceInt(attr, "max_qp_rd_atom"))
                    .maxQpInitRdAtom(deviceInt(attr, "max_qp_init_rd_atom"))
                    .maxSrq(deviceInt(attr, "max_srq")).maxSrqWr(deviceInt(attr, "max_srq_wr"))
                    .maxSrqSge(deviceInt(attr, "max_srq_sge"))
                    .atomics(deviceInt(attr, "atomic_cap") != IbvStructs.IBV_ATOMIC_NONE).windowTypes(windows)
                    .maxInlineData(MAX_INLINE.computeIfAbsent(name, n -> probeMaxInline(ctx, n)))
                    .ports(Byte.toUnsignedInt(attr.get(JAVA_BYTE, offsetOf(IbvStructs.DEVICE_ATTR, "phys_port_cnt"))))
                    .build();
        }
        List<PortAttributes> ports = new ArrayList<>();
        for (int p = 1; p <= attributes.ports(); p++) ports.add(queryPort(ctx, name, p));
        return new DeviceInfo("ibv", name, attributes, ports);
    }

    private static int deviceInt(MemorySegment attr, String field) {
        return attr.get(JAVA_INT, offsetOf(IbvStructs.DEVICE_ATTR, field));
    }

    /**
     * {@code ___ibv_query_port} of {@code <infiniband/verbs.h>}: {@code verbs_context->query_port} with the full
     * struct when the context is extended and its {@code sz} covers the op, else the exported compat symbol.
     */
    static PortAttributes queryPort(MemorySegment ctx, String name, int port) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(IbvStructs.PORT_ATTR);
            MemorySegment extended = extendedQueryPort(ctx);
            int rc = extended != null
                    ? callInt(Ibv.OP_QUERY_PORT, extended, Ibv.errnoState(), ctx, (byte) port, attr,
                            IbvStructs.PORT_ATTR.byteSize())
                    : callInt(Ibv.QUERY_PORT_COMPAT, Ibv.errnoState(), ctx, (byte) port, attr);
            if (rc != 0) throw IbvErrors.fail("ibv_query_port", errnoOf(rc), name + " port " + port);
            int state = attr.get(JAVA_INT, offsetOf(IbvStructs.PORT_ATTR, "state"));
            int mtu = attr.get(JAVA_INT, offsetOf(IbvStructs.PORT_ATTR, "active_mtu"));
            int lid = Short.toUnsignedInt(attr.get(JAVA_SHORT, offsetOf(IbvStructs.PORT_ATTR, "lid")));
            int linkLayer = attr.get(JAVA_BYTE, offsetOf(IbvStructs.PORT_ATTR, "link_layer"));
            int gidCount = Math.min(attr.get(JAVA_INT, offsetOf(IbvStructs.PORT_ATTR, "gid_tbl_len")), MAX_GIDS);
            int pkeys = Short.toUnsignedInt(attr.get(JAVA_SHORT, offsetOf(IbvStructs.PORT_ATTR, "pkey_tbl_len")));
            return new PortAttributes(port, state == IbvStructs.IBV_PORT_ACTIVE, Mtu.of(mtu), lid,
                    linkLayer == IbvStructs.IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand",
                    gids(ctx, name, port, gidCount, arena), pkeys);
        }
    }

    /**
     * The GID table up to its last non-empty entry (empty slots in between read as {@link Gid#ZERO}); the scan
     * stops at {@value #EMPTY_GIDS_TO_STOP} empty slots in a row, since each entry is a system call.
     */
    private static List<Gid> gids(MemorySegment ctx, String name, int port, int count, Arena arena) {
        MemorySegment gid = arena.allocate(IbvStructs.GID);
        List<Gid> gids = new ArrayList<>();
        int used = 0;
        for (int i = 0; i < count; i++) {
            int rc = callInt(Ibv.QUERY_GID, Ibv.errnoState(), ctx, (byte) port, i, gid);
            if (rc != 0) break; // past what the driver exposes
            Gid g = Gid.of(gid.toArray(JAVA_BYTE));
            gids.add(g);
            if (!g.equals(Gid.ZERO)) used = gids.size();
            else if (gids.size() - used >= EMPTY_GIDS_TO_STOP) break;
        }
        return gids.subList(0, used);
    }

    /** {@code verbs_get_ctx_op(ctx, query_port)}: the function pointer, or null to use the compat symbol. */
    private static MemorySegment extendedQueryPort(MemorySegment ctx) {
        if (ctx.get(ADDRESS, IbvStructs.CONTEXT_ABI_COMPAT).address() != IbvStructs.VERBS_ABI_IS_EXTENDED) return null;
        MemorySegment sz = MemorySegment.ofAddress(ctx.address() + IbvStructs.VCTX_SZ).reinterpret(JAVA_LONG.byteSize());
        if (sz.get(JAVA_LONG, 0) < IbvStructs.VCTX_QUERY_PORT_MIN_SZ) return null;
        MemorySegment op = MemorySegment.ofAddress(ctx.address() + IbvStructs.VCTX_QUERY_PORT)
                .reinterpret(ADDRESS.byteSize()).get(ADDRESS, 0);
        return op.equals(MemorySegment.NULL) ? null : op;
    }

    /**
     * The largest {@code max_inline_data} the device grants an RC QP: {@code ibv_device_attr} does not say, so a
     * throw-away QP is created with decreasing requests (once per device per JVM).
     */
    private static int probeMaxInline(MemorySegment ctx, String name) {
        MemorySegment pd = MemorySegment.NULL;
        MemorySegment cq = MemorySegment.NULL;
        try (Arena arena = Arena.ofConfined()) {
            pd = callAddress(Ibv.ALLOC_PD, Ibv.errnoState(), ctx);
            if (pd.equals(MemorySegment.NULL)) throw IbvErrors.fail("ibv_alloc_pd", Ibv.errno(), name);
            cq = callAddress(Ibv.CREATE_CQ, Ibv.errnoState(), ctx, 2, MemorySegment.NULL, MemorySegment.NULL, 0);
            if (cq.equals(MemorySegment.NULL)) throw IbvErrors.fail("ibv_create_cq", Ibv.errno(), name);
            MemorySegment init = arena.allocate(IbvStructs.QP_INIT_ATTR);
            for (int request : INLINE_PROBES) {
                init.fill((byte) 0);
                IbvQp.fillInitAttr(init, cq, cq, 1, 1, 1, 1, request);
                MemorySegment qp = callAddress(Ibv.CREATE_QP, Ibv.errnoState(), pd, init);
                if (qp.equals(MemorySegment.NULL)) continue;
                int granted = init.get(JAVA_INT, offsetOf(IbvStructs.QP_INIT_ATTR, "cap.max_inline_data"));
                int rc = callInt(Ibv.DESTROY_QP, Ibv.errnoState(), qp);
                if (rc != 0) throw IbvErrors.fail("ibv_destroy_qp", errnoOf(rc), name + " (inline probe)");
                return Math.max(granted, request);
            }
            return 0;
        } finally {
            if (!cq.equals(MemorySegment.NULL)) callInt(Ibv.DESTROY_CQ, Ibv.errnoState(), cq);
            if (!pd.equals(MemorySegment.NULL)) callInt(Ibv.DEALLOC_PD, Ibv.errnoState(), pd);
        }
    }
}
