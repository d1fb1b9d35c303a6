package io.mooring.verbs.ibv;

import static java.lang.foreign.MemoryLayout.paddingLayout;
import static java.lang.foreign.MemoryLayout.sequenceLayout;
import static java.lang.foreign.MemoryLayout.structLayout;
import static java.lang.foreign.MemoryLayout.unionLayout;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.SequenceLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.UnionLayout;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The rdma-core (libibverbs, rdma-core 44, Linux x86_64 glibc) ABI as seen by the {@code ibv} provider: struct
 * layouts, hot-path field offsets, {@code ctx->ops} slots and enum values.
 *
 * <p><b>Why hand-written.</b> jextract is not available to this build, and a generated binding would pull in
 * hundreds of declarations the provider never touches. The provider needs a few dozen fields, so they are
 * written here once, with C member names and explicit padding, so that each layout's {@code byteSize()} is
 * C's {@code sizeof} and {@code byteOffset(groupElement("x"))} is C's {@code offsetof}. Anonymous C unions
 * are unnamed Java groups; {@link #offsetOf} looks through them the way C does. Opaque members (pthread
 * objects, ops we never call) are named byte blobs or padding, so only their extent is declared.
 *
 * <p><b>How it is verified.</b> {@code IbvStructsLayoutTest} compiles {@code src/test/c/ibv_layout.c} against
 * the installed {@code <infiniband/verbs.h>} with gcc, runs it, and compares every layout here (size,
 * alignment, offset and size of every named member), every {@code long} offset constant (named after its C
 * member path: {@code SEND_WR_WR_RDMA_RKEY} is {@code ibv_send_wr.wr.rdma.rkey}) and every {@code int} enum
 * constant (named exactly as in C) with what the compiler printed; it also fails on anything the C program
 * prints that is declared nowhere here, so the two stay in step. The pthread sizes make these layouts specific
 * to x86_64 glibc; the test proves them on whatever machine builds the module.
 *
 * <p><b>Rule.</b> Every native offset, size or enum value the provider uses comes from this class; no
 * numeric literal describing rdma-core's ABI appears anywhere else.
 */
final class IbvStructs {

    private IbvStructs() {
    }

    /** How {@code __be32} members ({@code imm_data}) are read and written: the value comes out in host order. */
    static final ValueLayout.OfInt BE32 = JAVA_INT.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong BE64 = JAVA_LONG.withOrder(ByteOrder.BIG_ENDIAN);

    /** {@code pthread_mutex_t}: opaque, 40 bytes, 8-aligned on x86_64 glibc. */
    private static final SequenceLayout PTHREAD_MUTEX = sequenceLayout(5, JAVA_LONG);
    /** {@code pthread_cond_t}: opaque, 48 bytes, 8-aligned on x86_64 glibc. */
    private static final SequenceLayout PTHREAD_COND = sequenceLayout(6, JAVA_LONG);

    // ---------------------------------------------------------------------------------------------------------
    // Struct layouts, in dependency order.
    // ---------------------------------------------------------------------------------------------------------

    /** {@code union ibv_gid}; both halves are big-endian on the wire and in memory. */
    static final UnionLayout GID = unionLayout(
            bytes(16, "raw"),
            structLayout(BE64.withName("subnet_prefix"), BE64.withName("interface_id")).withName("global"))
            .withName("ibv_gid");

    /** Filled by {@code ibv_query_device}. */
    static final StructLayout DEVICE_ATTR = structLayout(
            bytes(64, "fw_ver"),
            BE64.withName("node_guid"),
            BE64.withName("sys_image_guid"),
            int64("max_mr_size"),
            int64("page_size_cap"),
            int32("vendor_id"),
            int32("vendor_part_id"),
            int32("hw_ver"),
            int32("max_qp"),
            int32("max_qp_wr"),
            int32("device_cap_flags"),
            int32("max_sge"),
            int32("max_sge_rd"),
            int32("max_cq"),
            int32("max_cqe"),
            int32("max_mr"),
            int32("max_pd"),
            int32("max_qp_rd_atom"),
            int32("max_ee_rd_atom"),
            int32("max_res_rd_atom"),
            int32("max_qp_init_rd_atom"),
            int32("max_ee_init_rd_atom"),
            int32("atomic_cap"),
            int32("max_ee"),
            int32("max_rdd"),
            int32("max_mw"),
            int32("max_raw_ipv6_qp"),
            int32("max_raw_ethy_qp"),
            int32("max_mcast_grp"),
            int32("max_mcast_qp_attach"),
            int32("max_total_mcast_qp_attach"),
            int32("max_ah"),
            int32("max_fmr"),
            int32("max_map_per_fmr"),
            int32("max_srq"),
            int32("max_srq_wr"),
            int32("max_srq_sge"),
            int16("max_pkeys"),
            int8("local_ca_ack_delay"),
            int8("phys_port_cnt"),
            paddingLayout(4))
            .withName("ibv_device_attr");

    /**
     * The public {@code struct ibv_port_attr}, which {@code verbs_context->query_port} fills when passed
     * {@code PORT_ATTR.byteSize()}. The exported {@code ibv_query_port} symbol instead fills libibverbs' private
     * {@code struct _compat_ibv_port_attr}, which is this struct without its last member: only the first
     * {@link #PORT_ATTR_COMPAT_SIZE} bytes. Allocate the full size either way.
     */
    static final StructLayout PORT_ATTR = structLayout(
            int32("state"),
            int32("max_mtu"),
            int32("active_mtu"),
            int32("gid_tbl_len"),
            int32("port_cap_flags"),
            int32("max_msg_sz"),
            int32("bad_pkey_cntr"),
            int32("qkey_viol_cntr"),
            int16("pkey_tbl_len"),
            int16("lid"),
            int16("sm_lid"),
            int8("lmc"),
            int8("max_vl_num"),
            int8("sm_sl"),
            int8("subnet_timeout"),
            int8("init_type_reply"),
            int8("active_width"),
            int8("active_speed"),
            int8("phys_state"),
            int8("link_layer"),
            int8("flags"),
            int16("port_cap_flags2"),
            paddingLayout(2))
            .withName("ibv_port_attr");

    /**
     * {@code struct ibv_context}. Its {@code ops} member is the legacy function table through which the
     * static inline verbs ({@code ibv_poll_cq}, {@code ibv_post_send}, ...) call the driver.
     */
    static final StructLayout CONTEXT = structLayout(
            ptr("device"),
            structLayout(
                    ptr("_compat_query_device"),
                    ptr("_compat_query_port"),
                    ptr("_compat_alloc_pd"),
                    ptr("_compat_dealloc_pd"),
                    ptr("_compat_reg_mr"),
                    ptr("_compat_rereg_mr"),
                    ptr("_compat_dereg_mr"),
                    ptr("alloc_mw"),
                    ptr("bind_mw"),
                    ptr("dealloc_mw"),
                    ptr("_compat_create_cq"),
                    ptr("poll_cq"),
                    ptr("req_notify_cq"),
                    ptr("_compat_cq_event"),
                    ptr("_compat_resize_cq"),
                    ptr("_compat_destroy_cq"),
                    ptr("_compat_create_srq"),
                    ptr("_compat_modify_srq"),
                    ptr("_compat_query_srq"),
                    ptr("_compat_destroy_srq"),
                    ptr("post_srq_recv"),
                    ptr("_compat_create_qp"),
                    ptr("_compat_query_qp"),
                    ptr("_compat_modify_qp"),
                    ptr("_compat_destroy_qp"),
                    ptr("post_send"),
                    ptr("post_recv"),
                    ptr("_compat_create_ah"),
                    ptr("_compat_destroy_ah"),
                    ptr("_compat_attach_mcast"),
                    ptr("_compat_detach_mcast"),
                    ptr("_compat_async_event"))
                    .withName("ops"),
            int32("cmd_fd"),
            int32("async_fd"),
            int32("num_comp_vectors"),
            paddingLayout(4),
            PTHREAD_MUTEX.withName("mutex"),
            ptr("abi_compat"))
            .withName("ibv_context");

    /**
     * {@code struct verbs_context}, which ends with the {@code ibv_context} that the API hands out, so its other
     * members lie at negative offsets from an {@code ibv_context *} (see {@link #VCTX_QUERY_PORT}).
     */
    static final StructLayout VERBS_CONTEXT = structLayout(
            ptr("query_port"),
            // advise_mr .. _ABI_placeholder3: 38 pointer-sized members the provider does not use
            paddingLayout(38 * ADDRESS.byteSize()),
            int64("sz"),
            CONTEXT.withName("context"))
            .withName("verbs_context");

    static final StructLayout PD = structLayout(
            ptr("context"),
            int32("handle"),
            paddingLayout(4))
            .withName("ibv_pd");

    static final StructLayout MR = structLayout(
            ptr("context"),
            ptr("pd"),
            ptr("addr"),
            int64("length"),
            int32("handle"),
            int32("lkey"),
            int32("rkey"),
            paddingLayout(4))
            .withName("ibv_mr");

    /** Note: for type-2 windows the provider does not update {@code rkey} after a bind; track it yourself. */
    static final StructLayout MW = structLayout(
            ptr("context"),
            ptr("pd"),
            int32("rkey"),
            int32("handle"),
            int32("type"),
            paddingLayout(4))
            .withName("ibv_mw");

    static final StructLayout MW_BIND_INFO = structLayout(
            ptr("mr"),
            int64("addr"),
            int64("length"),
            int32("mw_access_flags"),
            paddingLayout(4))
            .withName("ibv_mw_bind_info");

    /** Argument of {@code ops.bind_mw} (type-1 windows). */
    static final StructLayout MW_BIND = structLayout(
            int64("wr_id"),
            int32("send_flags"),
            paddingLayout(4),
            MW_BIND_INFO.withName("bind_info"))
            .withName("ibv_mw_bind");

    static final StructLayout COMP_CHANNEL = structLayout(
            ptr("context"),
            int32("fd"),
            int32("refcnt"))
            .withName("ibv_comp_channel");

    static final StructLayout CQ = structLayout(
            ptr("context"),
            ptr("channel"),
            ptr("cq_context"),
            int32("handle"),
            int32("cqe"),
            PTHREAD_MUTEX.withName("mutex"),
            PTHREAD_COND.withName("cond"),
            int32("comp_events_completed"),
            int32("async_events_completed"))
            .withName("ibv_cq");

    static final StructLayout QP = structLayout(
            ptr("context"),
            ptr("qp_context"),
            ptr("pd"),
            ptr("send_cq"),
            ptr("recv_cq"),
            ptr("srq"),
            int32("handle"),
            int32("qp_num"),
            int32("state"),
            int32("qp_type"),
            PTHREAD_MUTEX.withName("mutex"),
            PTHREAD_COND.withName("cond"),
            int32("events_completed"),
            paddingLayout(4))
            .withName("ibv_qp");

    static final StructLayout QP_CAP = structLayout(
            int32("max_send_wr"),
            int32("max_recv_wr"),
            int32("max_send_sge"),
            int32("max_recv_sge"),
            int32("max_inline_data"))
            .withName("ibv_qp_cap");

    static final StructLayout QP_INIT_ATTR = structLayout(
            ptr("qp_context"),
            ptr("send_cq"),
            ptr("recv_cq"),
            ptr("srq"),
            QP_CAP.withName("cap"),
            int32("qp_type"),
            int32("sq_sig_all"),
            paddingLayout(4))
            .withName("ibv_qp_init_attr");

    static final StructLayout SRQ_ATTR = structLayout(
            int32("max_wr"),
            int32("max_sge"),
            int32("srq_limit"))
            .withName("ibv_srq_attr");

    static final StructLayout SRQ_INIT_ATTR = structLayout(
            ptr("srq_context"),
            SRQ_ATTR.withName("attr"),
            paddingLayout(4))
            .withName("ibv_srq_init_attr");

    static final StructLayout GLOBAL_ROUTE = structLayout(
            GID.withName("dgid"),
            int32("flow_label"),
            int8("sgid_index"),
            int8("hop_limit"),
            int8("traffic_class"),
            paddingLayout(1))
            .withName("ibv_global_route");

    static final StructLayout AH_ATTR = structLayout(
            GLOBAL_ROUTE.withName("grh"),
            int16("dlid"),
            int8("sl"),
            int8("src_path_bits"),
            int8("static_rate"),
            int8("is_global"),
            int8("port_num"),
            paddingLayout(1))
            .withName("ibv_ah_attr");

    static final StructLayout QP_ATTR = structLayout(
            int32("qp_state"),
            int32("cur_qp_state"),
            int32("path_mtu"),
            int32("path_mig_state"),
            int32("qkey"),
            int32("rq_psn"),
            int32("sq_psn"),
            int32("dest_qp_num"),
            int32("qp_access_flags"),
            QP_CAP.withName("cap"),
            AH_ATTR.withName("ah_attr"),
            AH_ATTR.withName("alt_ah_attr"),
            int16("pkey_index"),
            int16("alt_pkey_index"),
            int8("en_sqd_async_notify"),
            int8("sq_draining"),
            int8("max_rd_atomic"),
            int8("max_dest_rd_atomic"),
            int8("min_rnr_timer"),
            int8("port_num"),
            int8("timeout"),
            int8("retry_cnt"),
            int8("rnr_retry"),
            int8("alt_port_num"),
            int8("alt_timeout"),
            paddingLayout(1),
            int32("rate_limit"),
            paddingLayout(4))
            .withName("ibv_qp_attr");

    static final StructLayout SGE = structLayout(
            int64("addr"),
            int32("length"),
            int32("lkey"))
            .withName("ibv_sge");

    /** Only the RC variants of the {@code wr} union are declared (no {@code ud}); the union keeps its C size. */
    static final StructLayout SEND_WR = structLayout(
            int64("wr_id"),
            ptr("next"),
            ptr("sg_list"),
            int32("num_sge"),
            int32("opcode"),
            int32("send_flags"),
            unionLayout(BE32.withName("imm_data"), int32("invalidate_rkey")),
            unionLayout(
                    structLayout(
                            int64("remote_addr"),
                            int32("rkey"),
                            paddingLayout(4))
                            .withName("rdma"),
                    structLayout(
                            int64("remote_addr"),
                            int64("compare_add"),
                            int64("swap"),
                            int32("rkey"),
                            paddingLayout(4))
                            .withName("atomic"))
                    .withName("wr"),
            // qp_type.xrc.remote_srqn (XRC only) and alignment of the union below
            paddingLayout(8),
            unionLayout(
                    structLayout(
                            ptr("mw"),
                            int32("rkey"),
                            paddingLayout(4),
                            MW_BIND_INFO.withName("bind_info"))
                            .withName("bind_mw"),
                    structLayout(
                            ptr("hdr"),
                            int16("hdr_sz"),
                            int16("mss"),
                            paddingLayout(4))
                            .withName("tso")))
            .withName("ibv_send_wr");

    static final StructLayout RECV_WR = structLayout(
            int64("wr_id"),
            ptr("next"),
            ptr("sg_list"),
            int32("num_sge"),
            paddingLayout(4))
            .withName("ibv_recv_wr");

    static final StructLayout WC = structLayout(
            int64("wr_id"),
            int32("status"),
            int32("opcode"),
            int32("vendor_err"),
            int32("byte_len"),
            unionLayout(BE32.withName("imm_data"), int32("invalidated_rkey")),
            int32("qp_num"),
            int32("src_qp"),
            int32("wc_flags"),
            int16("pkey_index"),
            int16("slid"),
            int8("sl"),
            int8("dlid_path_bits"),
            paddingLayout(2))
            .withName("ibv_wc");

    static final StructLayout ASYNC_EVENT = structLayout(
            unionLayout(
                    ptr("cq"),
                    ptr("qp"),
                    ptr("srq"),
                    ptr("wq"),
                    int32("port_num"))
                    .withName("element"),
            int32("event_type"),
            paddingLayout(4))
            .withName("ibv_async_event");

    /**
     * libc's {@code struct pollfd}, for waiting on a completion channel's or the async event fd with
     * {@code poll(2)} (not rdma-core, but declared and verified here like everything native the provider touches).
     */
    static final StructLayout POLLFD = structLayout(
            int32("fd"),
            int16("events"),
            int16("revents"))
            .withName("pollfd");

    // ---------------------------------------------------------------------------------------------------------
    // Static inline verbs: function pointers in ctx->ops, as offsets from an ibv_context *.
    // ---------------------------------------------------------------------------------------------------------

    static final long CONTEXT_OPS_ALLOC_MW = offsetOf(CONTEXT, "ops.alloc_mw");
    static final long CONTEXT_OPS_BIND_MW = offsetOf(CONTEXT, "ops.bind_mw");
    static final long CONTEXT_OPS_DEALLOC_MW = offsetOf(CONTEXT, "ops.dealloc_mw");
    static final long CONTEXT_OPS_POLL_CQ = offsetOf(CONTEXT, "ops.poll_cq");
    static final long CONTEXT_OPS_REQ_NOTIFY_CQ = offsetOf(CONTEXT, "ops.req_notify_cq");
    static final long CONTEXT_OPS_POST_SRQ_RECV = offsetOf(CONTEXT, "ops.post_srq_recv");
    static final long CONTEXT_OPS_POST_SEND = offsetOf(CONTEXT, "ops.post_send");
    static final long CONTEXT_OPS_POST_RECV = offsetOf(CONTEXT, "ops.post_recv");

    // ---------------------------------------------------------------------------------------------------------
    // verbs_get_ctx_op(ctx, query_port): how ___ibv_query_port finds the extended op.
    // ---------------------------------------------------------------------------------------------------------

    /** {@code ctx->abi_compat} holds this ({@code UINTPTR_MAX}) when {@code ctx} is embedded in a verbs_context. */
    static final long CONTEXT_ABI_COMPAT = offsetOf(CONTEXT, "abi_compat");
    static final long VERBS_ABI_IS_EXTENDED = -1L;

    /** {@code verbs_context.query_port}, relative to the embedded {@code ibv_context} (negative). */
    static final long VCTX_QUERY_PORT = offsetOf(VERBS_CONTEXT, "query_port") - offsetOf(VERBS_CONTEXT, "context");
    /** {@code verbs_context.sz}, relative to the embedded {@code ibv_context} (negative). */
    static final long VCTX_SZ = offsetOf(VERBS_CONTEXT, "sz") - offsetOf(VERBS_CONTEXT, "context");
    /** {@code query_port} exists only if {@code sz >= } this (and the pointer is non-NULL). */
    static final long VCTX_QUERY_PORT_MIN_SZ = VERBS_CONTEXT.byteSize() - offsetOf(VERBS_CONTEXT, "query_port");

    /** Bytes the exported {@code ibv_query_port} writes: {@code sizeof(struct _compat_ibv_port_attr)}. */
    static final long PORT_ATTR_COMPAT_SIZE = offsetOf(PORT_ATTR, "port_cap_flags2");

    // ---------------------------------------------------------------------------------------------------------
    // Hot-path field offsets, named after their C member path.
    // ---------------------------------------------------------------------------------------------------------

    static final long SGE_ADDR = offsetOf(SGE, "addr");
    static final long SGE_LENGTH = offsetOf(SGE, "length");
    static final long SGE_LKEY = offsetOf(SGE, "lkey");

    static final long SEND_WR_WR_ID = offsetOf(SEND_WR, "wr_id");
    static final long SEND_WR_NEXT = offsetOf(SEND_WR, "next");
    static final long SEND_WR_SG_LIST = offsetOf(SEND_WR, "sg_list");
    static final long SEND_WR_NUM_SGE = offsetOf(SEND_WR, "num_sge");
    static final long SEND_WR_OPCODE = offsetOf(SEND_WR, "opcode");
    static final long SEND_WR_SEND_FLAGS = offsetOf(SEND_WR, "send_flags");
    /** Big-endian. */
    static final long SEND_WR_IMM_DATA = offsetOf(SEND_WR, "imm_data");
    static final long SEND_WR_INVALIDATE_RKEY = offsetOf(SEND_WR, "invalidate_rkey");
    static final long SEND_WR_WR_RDMA_REMOTE_ADDR = offsetOf(SEND_WR, "wr.rdma.remote_addr");
    static final long SEND_WR_WR_RDMA_RKEY = offsetOf(SEND_WR, "wr.rdma.rkey");
    static final long SEND_WR_WR_ATOMIC_REMOTE_ADDR = offsetOf(SEND_WR, "wr.atomic.remote_addr");
    static final long SEND_WR_WR_ATOMIC_COMPARE_ADD = offsetOf(SEND_WR, "wr.atomic.compare_add");
    static final long SEND_WR_WR_ATOMIC_SWAP = offsetOf(SEND_WR, "wr.atomic.swap");
    static final long SEND_WR_WR_ATOMIC_RKEY = offsetOf(SEND_WR, "wr.atomic.rkey");
    static final long SEND_WR_BIND_MW_MW = offsetOf(SEND_WR, "bind_mw.mw");
    static final long SEND_WR_BIND_MW_RKEY = offsetOf(SEND_WR, "bind_mw.rkey");
    static final long SEND_WR_BIND_MW_BIND_INFO_MR = offsetOf(SEND_WR, "bind_mw.bind_info.mr");
    static final long SEND_WR_BIND_MW_BIND_INFO_ADDR = offsetOf(SEND_WR, "bind_mw.bind_info.addr");
    static final long SEND_WR_BIND_MW_BIND_INFO_LENGTH = offsetOf(SEND_WR, "bind_mw.bind_info.length");
    static final long SEND_WR_BIND_MW_BIND_INFO_MW_ACCESS_FLAGS =
            offsetOf(SEND_WR, "bind_mw.bind_info.mw_access_flags");

    static final long RECV_WR_WR_ID = offsetOf(RECV_WR, "wr_id");
    static final long RECV_WR_NEXT = offsetOf(RECV_WR, "next");
    static final long RECV_WR_SG_LIST = offsetOf(RECV_WR, "sg_list");
    static final long RECV_WR_NUM_SGE = offsetOf(RECV_WR, "num_sge");

    static final long WC_WR_ID = offsetOf(WC, "wr_id");
    static final long WC_STATUS = offsetOf(WC, "status");
    static final long WC_OPCODE = offsetOf(WC, "opcode");
    static final long WC_VENDOR_ERR = offsetOf(WC, "vendor_err");
    static final long WC_BYTE_LEN = offsetOf(WC, "byte_len");
    /** Big-endian; valid when {@code wc_flags & IBV_WC_WITH_IMM}. */
    static final long WC_IMM_DATA = offsetOf(WC, "imm_data");
    /** Valid when {@code wc_flags & IBV_WC_WITH_INV}. */
    static final long WC_INVALIDATED_RKEY = offsetOf(WC, "invalidated_rkey");
    static final long WC_QP_NUM = offsetOf(WC, "qp_num");
    static final long WC_WC_FLAGS = offsetOf(WC, "wc_flags");

    static final long MR_LKEY = offsetOf(MR, "lkey");
    static final long MR_RKEY = offsetOf(MR, "rkey");
    static final long MW_RKEY = offsetOf(MW, "rkey");
    static final long QP_QP_NUM = offsetOf(QP, "qp_num");
    static final long POLLFD_FD = offsetOf(POLLFD, "fd");
    static final long POLLFD_EVENTS = offsetOf(POLLFD, "events");
    static final long POLLFD_REVENTS = offsetOf(POLLFD, "revents");

    // ---------------------------------------------------------------------------------------------------------
    // Enum values, named as in <infiniband/verbs.h>.
    // ---------------------------------------------------------------------------------------------------------

    // enum ibv_wr_opcode
    static final int IBV_WR_RDMA_WRITE = 0;
    static final int IBV_WR_RDMA_WRITE_WITH_IMM = 1;
    static final int IBV_WR_SEND = 2;
    static final int IBV_WR_SEND_WITH_IMM = 3;
    static final int IBV_WR_RDMA_READ = 4;
    static final int IBV_WR_ATOMIC_CMP_AND_SWP = 5;
    static final int IBV_WR_ATOMIC_FETCH_AND_ADD = 6;
    static final int IBV_WR_LOCAL_INV = 7;
    static final int IBV_WR_BIND_MW = 8;
    static final int IBV_WR_SEND_WITH_INV = 9;
    static final int IBV_WR_ATOMIC_WRITE = 15;

    // enum ibv_wc_opcode; receive completions have the IBV_WC_RECV bit set
    static final int IBV_WC_SEND = 0;
    static final int IBV_WC_RDMA_WRITE = 1;
    static final int IBV_WC_RDMA_READ = 2;
    static final int IBV_WC_COMP_SWAP = 3;
    static final int IBV_WC_FETCH_ADD = 4;
    static final int IBV_WC_BIND_MW = 5;
    static final int IBV_WC_LOCAL_INV = 6;
    static final int IBV_WC_ATOMIC_WRITE = 9;
    static final int IBV_WC_RECV = 1 << 7;
    static final int IBV_WC_RECV_RDMA_WITH_IMM = IBV_WC_RECV + 1;

    // enum ibv_wc_status (the tag-matching statuses past IBV_WC_GENERAL_ERR are not used)
    static final int IBV_WC_SUCCESS = 0;
    static final int IBV_WC_LOC_LEN_ERR = 1;
    static final int IBV_WC_LOC_QP_OP_ERR = 2;
    static final int IBV_WC_LOC_EEC_OP_ERR = 3;
    static final int IBV_WC_LOC_PROT_ERR = 4;
    static final int IBV_WC_WR_FLUSH_ERR = 5;
    static final int IBV_WC_MW_BIND_ERR = 6;
    static final int IBV_WC_BAD_RESP_ERR = 7;
    static final int IBV_WC_LOC_ACCESS_ERR = 8;
    static final int IBV_WC_REM_INV_REQ_ERR = 9;
    static final int IBV_WC_REM_ACCESS_ERR = 10;
    static final int IBV_WC_REM_OP_ERR = 11;
    static final int IBV_WC_RETRY_EXC_ERR = 12;
    static final int IBV_WC_RNR_RETRY_EXC_ERR = 13;
    static final int IBV_WC_LOC_RDD_VIOL_ERR = 14;
    static final int IBV_WC_REM_INV_RD_REQ_ERR = 15;
    static final int IBV_WC_REM_ABORT_ERR = 16;
    static final int IBV_WC_INV_EECN_ERR = 17;
    static final int IBV_WC_INV_EEC_STATE_ERR = 18;
    static final int IBV_WC_FATAL_ERR = 19;
    static final int IBV_WC_RESP_TIMEOUT_ERR = 20;
    static final int IBV_WC_GENERAL_ERR = 21;

    /** C names of {@code enum ibv_wc_status}, indexed by value. */
    private static final String[] WC_STATUS_NAMES = {
        "IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR", "IBV_WC_LOC_EEC_OP_ERR",
        "IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR",
        "IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_OP_ERR",
        "IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
        "IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR", "IBV_WC_INV_EEC_STATE_ERR",
        "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR",
    };

    // enum ibv_wc_flags
    static final int IBV_WC_GRH = 1;
    static final int IBV_WC_WITH_IMM = 1 << 1;
    static final int IBV_WC_IP_CSUM_OK = 1 << 2;
    static final int IBV_WC_WITH_INV = 1 << 3;

    // enum ibv_access_flags
    static final int IBV_ACCESS_LOCAL_WRITE = 1;
    static final int IBV_ACCESS_REMOTE_WRITE = 1 << 1;
    static final int IBV_ACCESS_REMOTE_READ = 1 << 2;
    static final int IBV_ACCESS_REMOTE_ATOMIC = 1 << 3;
    static final int IBV_ACCESS_MW_BIND = 1 << 4;
    static final int IBV_ACCESS_ZERO_BASED = 1 << 5;
    static final int IBV_ACCESS_ON_DEMAND = 1 << 6;
    static final int IBV_ACCESS_HUGETLB = 1 << 7;
    static final int IBV_ACCESS_RELAXED_ORDERING = 1 << 20;

    // enum ibv_qp_state
    static final int IBV_QPS_RESET = 0;
    static final int IBV_QPS_INIT = 1;
    static final int IBV_QPS_RTR = 2;
    static final int IBV_QPS_RTS = 3;
    static final int IBV_QPS_SQD = 4;
    static final int IBV_QPS_SQE = 5;
    static final int IBV_QPS_ERR = 6;
    static final int IBV_QPS_UNKNOWN = 7;

    // enum ibv_qp_attr_mask
    static final int IBV_QP_STATE = 1;
    static final int IBV_QP_CUR_STATE = 1 << 1;
    static final int IBV_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2;
    static final int IBV_QP_ACCESS_FLAGS = 1 << 3;
    static final int IBV_QP_PKEY_INDEX = 1 << 4;
    static final int IBV_QP_PORT = 1 << 5;
    static final int IBV_QP_QKEY = 1 << 6;
    static final int IBV_QP_AV = 1 << 7;
    static final int IBV_QP_PATH_MTU = 1 << 8;
    static final int IBV_QP_TIMEOUT = 1 << 9;
    static final int IBV_QP_RETRY_CNT = 1 << 10;
    static final int IBV_QP_RNR_RETRY = 1 << 11;
    static final int IBV_QP_RQ_PSN = 1 << 12;
    static final int IBV_QP_MAX_QP_RD_ATOMIC = 1 << 13;
    static final int IBV_QP_ALT_PATH = 1 << 14;
    static final int IBV_QP_MIN_RNR_TIMER = 1 << 15;
    static final int IBV_QP_SQ_PSN = 1 << 16;
    static final int IBV_QP_MAX_DEST_RD_ATOMIC = 1 << 17;
    static final int IBV_QP_PATH_MIG_STATE = 1 << 18;
    static final int IBV_QP_CAP = 1 << 19;
    static final int IBV_QP_DEST_QPN = 1 << 20;
    static final int IBV_QP_RATE_LIMIT = 1 << 25;

    // enum ibv_send_flags
    static final int IBV_SEND_FENCE = 1;
    static final int IBV_SEND_SIGNALED = 1 << 1;
    static final int IBV_SEND_SOLICITED = 1 << 2;
    static final int IBV_SEND_INLINE = 1 << 3;
    static final int IBV_SEND_IP_CSUM = 1 << 4;

    // enum ibv_mw_type
    static final int IBV_MW_TYPE_1 = 1;
    static final int IBV_MW_TYPE_2 = 2;

    // enum ibv_mtu
    static final int IBV_MTU_256 = 1;
    static final int IBV_MTU_512 = 2;
    static final int IBV_MTU_1024 = 3;
    static final int IBV_MTU_2048 = 4;
    static final int IBV_MTU_4096 = 5;

    // enum ibv_qp_type (reliable connected is the only type the provider creates)
    static final int IBV_QPT_RC = 2;

    // enum ibv_srq_attr_mask
    static final int IBV_SRQ_MAX_WR = 1;
    static final int IBV_SRQ_LIMIT = 1 << 1;

    // enum ibv_port_state
    static final int IBV_PORT_NOP = 0;
    static final int IBV_PORT_DOWN = 1;
    static final int IBV_PORT_INIT = 2;
    static final int IBV_PORT_ARMED = 3;
    static final int IBV_PORT_ACTIVE = 4;
    static final int IBV_PORT_ACTIVE_DEFER = 5;

    // ibv_port_attr.link_layer; Ethernet (RoCE, rxe) needs a GRH in the address vector
    static final int IBV_LINK_LAYER_UNSPECIFIED = 0;
    static final int IBV_LINK_LAYER_INFINIBAND = 1;
    static final int IBV_LINK_LAYER_ETHERNET = 2;

    // enum ibv_device_cap_flags: which memory window types a device supports
    static final int IBV_DEVICE_MEM_WINDOW = 1 << 17;
    static final int IBV_DEVICE_MEM_WINDOW_TYPE_2A = 1 << 23;
    static final int IBV_DEVICE_MEM_WINDOW_TYPE_2B = 1 << 24;

    // enum ibv_atomic_cap
    static final int IBV_ATOMIC_NONE = 0;
    static final int IBV_ATOMIC_HCA = 1;
    static final int IBV_ATOMIC_GLOB = 2;

    // libc (x86_64 glibc): making the channel fds non-blocking and waiting on them
    static final int F_GETFL = 3;
    static final int F_SETFL = 4;
    static final int O_NONBLOCK = 0x800;
    static final int POLLIN = 1;
    static final int EFD_NONBLOCK = 0x800;
    static final int EFD_CLOEXEC = 0x80000;

    // enum ibv_event_type
    static final int IBV_EVENT_CQ_ERR = 0;
    static final int IBV_EVENT_QP_FATAL = 1;
    static final int IBV_EVENT_QP_REQ_ERR = 2;
    static final int IBV_EVENT_QP_ACCESS_ERR = 3;
    static final int IBV_EVENT_COMM_EST = 4;
    static final int IBV_EVENT_SQ_DRAINED = 5;
    static final int IBV_EVENT_PATH_MIG = 6;
    static final int IBV_EVENT_PATH_MIG_ERR = 7;
    static final int IBV_EVENT_DEVICE_FATAL = 8;
    static final int IBV_EVENT_PORT_ACTIVE = 9;
    static final int IBV_EVENT_PORT_ERR = 10;
    static final int IBV_EVENT_LID_CHANGE = 11;
    static final int IBV_EVENT_PKEY_CHANGE = 12;
    static final int IBV_EVENT_SM_CHANGE = 13;
    static final int IBV_EVENT_SRQ_ERR = 14;
    static final int IBV_EVENT_SRQ_LIMIT_REACHED = 15;
    static final int IBV_EVENT_QP_LAST_WQE_REACHED = 16;
    static final int IBV_EVENT_CLIENT_REREGISTER = 17;
    static final int IBV_EVENT_GID_CHANGE = 18;
    static final int IBV_EVENT_WQ_FATAL = 19;

    /** The C name of an {@code ibv_wc_status} value, or {@code "IBV_WC_STATUS(n)"} for one not listed here. */
    static String wcStatusName(int status) {
        return status >= 0 && status < WC_STATUS_NAMES.length
                ? WC_STATUS_NAMES[status]
                : "IBV_WC_STATUS(" + status + ")";
    }

    /**
     * C's {@code offsetof(type, path)} for a dotted member path such as {@code "wr.rdma.rkey"}: like C, a name
     * is looked up through unnamed (anonymous) unions and structs.
     *
     * @throws IllegalArgumentException if the path does not name a member
     */
    static long offsetOf(GroupLayout layout, String path) {
        long offset = 0;
        MemoryLayout current = layout;
        for (String name : path.split("\\.")) {
            if (!(current instanceof GroupLayout group) || !(findMember(group, name, 0) instanceof Member m)) {
                throw new IllegalArgumentException(layout.name().orElse("layout") + " has no member " + path);
            }
            offset += m.offset();
            current = m.layout();
        }
        return offset;
    }

    private record Member(MemoryLayout layout, long offset) {
    }

    private static Member findMember(GroupLayout group, String name, long base) {
        long offset = base;
        for (MemoryLayout member : group.memberLayouts()) {
            if (member.name().isPresent()) {
                if (member.name().get().equals(name)) {
                    return new Member(member, offset);
                }
            } else if (member instanceof GroupLayout anonymous
                    && findMember(anonymous, name, offset) instanceof Member found) {
                return found;
            }
            if (group instanceof StructLayout) {
                offset += member.byteSize();
            }
        }
        return null;
    }

    private static ValueLayout ptr(String name) {
        return ADDRESS.withName(name);
    }

    private static ValueLayout int64(String name) {
        return JAVA_LONG.withName(name);
    }

    private static ValueLayout int32(String name) {
        return JAVA_INT.withName(name);
    }

    private static ValueLayout int16(String name) {
        return JAVA_SHORT.withName(name);
    }

    private static ValueLayout int8(String name) {
        return JAVA_BYTE.withName(name);
    }

    private static SequenceLayout bytes(long count, String name) {
        return sequenceLayout(count, JAVA_BYTE).withName(name);
    }
}
