/*
 * Prints the rdma-core ABI facts that IbvStructs declares, as seen by the C compiler through the
 * installed <infiniband/verbs.h>. IbvStructsLayoutTest compiles and runs this and compares every line
 * with the Java side. Output, one fact per line:
 *
 *   size  <tag> <sizeof> <alignof>
 *   field <tag>.<member path> <offsetof> <sizeof member>
 *   const <NAME> <value>
 *
 * Member paths are C's (anonymous unions are transparent: ibv_wc.imm_data). The test fails on a line
 * that IbvStructs does not use as well as on a declaration this program does not print, so add both
 * sides together. Only headers are needed (no libibverbs at link or run time): everything printed is a
 * compile-time constant.
 */
#include <infiniband/verbs.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SIZE(kind, tag) \
	printf("size %s %zu %zu\n", #tag, sizeof(kind tag), _Alignof(kind tag))
#define MEMBER(kind, tag, path)                                          \
	printf("field %s.%s %zu %zu\n", #tag, #path, offsetof(kind tag, path), \
	       sizeof(((kind tag *)0)->path))
#define S(tag) SIZE(struct, tag)
#define F(tag, path) MEMBER(struct, tag, path)
#define VALUE(name, expr) printf("const %s %lld\n", name, (long long)(expr))
#define E(name) VALUE(#name, name)

/* Offset of a verbs_context member relative to the ibv_context embedded at its end (container_of). */
#define VCTX_REL(member) \
	((long long)offsetof(struct verbs_context, member) - \
	 (long long)offsetof(struct verbs_context, context))

static void structs(void)
{
	SIZE(union, ibv_gid);
	MEMBER(union, ibv_gid, raw);
	MEMBER(union, ibv_gid, global);
	MEMBER(union, ibv_gid, global.subnet_prefix);
	MEMBER(union, ibv_gid, global.interface_id);

	S(ibv_device_attr);
	F(ibv_device_attr, fw_ver); F(ibv_device_attr, node_guid); F(ibv_device_attr, sys_image_guid);
	F(ibv_device_attr, max_mr_size); F(ibv_device_attr, page_size_cap); F(ibv_device_attr, vendor_id);
	F(ibv_device_attr, vendor_part_id); F(ibv_device_attr, hw_ver); F(ibv_device_attr, max_qp);
	F(ibv_device_attr, max_qp_wr); F(ibv_device_attr, device_cap_flags); F(ibv_device_attr, max_sge);
	F(ibv_device_attr, max_sge_rd); F(ibv_device_attr, max_cq); F(ibv_device_attr, max_cqe);
	F(ibv_device_attr, max_mr); F(ibv_device_attr, max_pd); F(ibv_device_attr, max_qp_rd_atom);
	F(ibv_device_attr, max_ee_rd_atom); F(ibv_device_attr, max_res_rd_atom);
	F(ibv_device_attr, max_qp_init_rd_atom); F(ibv_device_attr, max_ee_init_rd_atom);
	F(ibv_device_attr, atomic_cap); F(ibv_device_attr, max_ee); F(ibv_device_attr, max_rdd);
	F(ibv_device_attr, max_mw); F(ibv_device_attr, max_raw_ipv6_qp); F(ibv_device_attr, max_raw_ethy_qp);
	F(ibv_device_attr, max_mcast_grp); F(ibv_device_attr, max_mcast_qp_attach);
	F(ibv_device_attr, max_total_mcast_qp_attach); F(ibv_device_attr, max_ah); F(ibv_device_attr, max_fmr);
	F(ibv_device_attr, max_map_per_fmr); F(ibv_device_attr, max_srq); F(ibv_device_attr, max_srq_wr);
	F(ibv_device_attr, max_srq_sge); F(ibv_device_attr, max_pkeys); F(ibv_device_attr, local_ca_ack_delay);
	F(ibv_device_attr, phys_port_cnt);

	S(ibv_port_attr);
	F(ibv_port_attr, state); F(ibv_port_attr, max_mtu); F(ibv_port_attr, active_mtu);
	F(ibv_port_attr, gid_tbl_len); F(ibv_port_attr, port_cap_flags); F(ibv_port_attr, max_msg_sz);
	F(ibv_port_attr, bad_pkey_cntr); F(ibv_port_attr, qkey_viol_cntr); F(ibv_port_attr, pkey_tbl_len);
	F(ibv_port_attr, lid); F(ibv_port_attr, sm_lid); F(ibv_port_attr, lmc); F(ibv_port_attr, max_vl_num);
	F(ibv_port_attr, sm_sl); F(ibv_port_attr, subnet_timeout); F(ibv_port_attr, init_type_reply);
	F(ibv_port_attr, active_width); F(ibv_port_attr, active_speed); F(ibv_port_attr, phys_state);
	F(ibv_port_attr, link_layer); F(ibv_port_attr, flags); F(ibv_port_attr, port_cap_flags2);

	S(ibv_context);
	F(ibv_context, device); F(ibv_context, ops); F(ibv_context, cmd_fd); F(ibv_context, async_fd);
	F(ibv_context, num_comp_vectors); F(ibv_context, mutex); F(ibv_context, abi_compat);
	F(ibv_context, ops._compat_query_device); F(ibv_context, ops._compat_query_port);
	F(ibv_context, ops._compat_alloc_pd); F(ibv_context, ops._compat_dealloc_pd);
	F(ibv_context, ops._compat_reg_mr); F(ibv_context, ops._compat_rereg_mr);
	F(ibv_context, ops._compat_dereg_mr); F(ibv_context, ops.alloc_mw); F(ibv_context, ops.bind_mw);
	F(ibv_context, ops.dealloc_mw); F(ibv_context, ops._compat_create_cq); F(ibv_context, ops.poll_cq);
	F(ibv_context, ops.req_notify_cq); F(ibv_context, ops._compat_cq_event);
	F(ibv_context, ops._compat_resize_cq); F(ibv_context, ops._compat_destroy_cq);
	F(ibv_context, ops._compat_create_srq); F(ibv_context, ops._compat_modify_srq);
	F(ibv_context, ops._compat_query_srq); F(ibv_context, ops._compat_destroy_srq);
	F(ibv_context, ops.post_srq_recv); F(ibv_context, ops._compat_create_qp);
	F(ibv_context, ops._compat_query_qp); F(ibv_context, ops._compat_modify_qp);
	F(ibv_context, ops._compat_destroy_qp); F(ibv_context, ops.post_send); F(ibv_context, ops.post_recv);
	F(ibv_context, ops._compat_create_ah); F(ibv_context, ops._compat_destroy_ah);
	F(ibv_context, ops._compat_attach_mcast); F(ibv_context, ops._compat_detach_mcast);
	F(ibv_context, ops._compat_async_event);

	S(verbs_context);
	F(verbs_context, query_port); F(verbs_context, sz); F(verbs_context, context);

	S(ibv_pd);
	F(ibv_pd, context); F(ibv_pd, handle);

	S(ibv_mr);
	F(ibv_mr, context); F(ibv_mr, pd); F(ibv_mr, addr); F(ibv_mr, length); F(ibv_mr, handle);
	F(ibv_mr, lkey); F(ibv_mr, rkey);

	S(ibv_mw);
	F(ibv_mw, context); F(ibv_mw, pd); F(ibv_mw, rkey); F(ibv_mw, handle); F(ibv_mw, type);

	S(ibv_mw_bind_info);
	F(ibv_mw_bind_info, mr); F(ibv_mw_bind_info, addr); F(ibv_mw_bind_info, length);
	F(ibv_mw_bind_info, mw_access_flags);

	S(ibv_mw_bind);
	F(ibv_mw_bind, wr_id); F(ibv_mw_bind, send_flags); F(ibv_mw_bind, bind_info);

	S(ibv_comp_channel);
	F(ibv_comp_channel, context); F(ibv_comp_channel, fd); F(ibv_comp_channel, refcnt);

	S(ibv_cq);
	F(ibv_cq, context); F(ibv_cq, channel); F(ibv_cq, cq_context); F(ibv_cq, handle); F(ibv_cq, cqe);
	F(ibv_cq, mutex); F(ibv_cq, cond); F(ibv_cq, comp_events_completed);
	F(ibv_cq, async_events_completed);

	S(ibv_qp);
	F(ibv_qp, context); F(ibv_qp, qp_context); F(ibv_qp, pd); F(ibv_qp, send_cq); F(ibv_qp, recv_cq);
	F(ibv_qp, srq); F(ibv_qp, handle); F(ibv_qp, qp_num); F(ibv_qp, state); F(ibv_qp, qp_type);
	F(ibv_qp, mutex); F(ibv_qp, cond); F(ibv_qp, events_completed);

	S(ibv_qp_cap);
	F(ibv_qp_cap, max_send_wr); F(ibv_qp_cap, max_recv_wr); F(ibv_qp_cap, max_send_sge);
	F(ibv_qp_cap, max_recv_sge); F(ibv_qp_cap, max_inline_data);

	S(ibv_qp_init_attr);
	F(ibv_qp_init_attr, qp_context); F(ibv_qp_init_attr, send_cq); F(ibv_qp_init_attr, recv_cq);
	F(ibv_qp_init_attr, srq); F(ibv_qp_init_attr, cap); F(ibv_qp_init_attr, qp_type);
	F(ibv_qp_init_attr, sq_sig_all);

	S(ibv_srq_attr);
	F(ibv_srq_attr, max_wr); F(ibv_srq_attr, max_sge); F(ibv_srq_attr, srq_limit);

	S(ibv_srq_init_attr);
	F(ibv_srq_init_attr, srq_context); F(ibv_srq_init_attr, attr);

	S(ibv_global_route);
	F(ibv_global_route, dgid); F(ibv_global_route, flow_label); F(ibv_global_route, sgid_index);
	F(ibv_global_route, hop_limit); F(ibv_global_route, traffic_class);

	S(ibv_ah_attr);
	F(ibv_ah_attr, grh); F(ibv_ah_attr, dlid); F(ibv_ah_attr, sl); F(ibv_ah_attr, src_path_bits);
	F(ibv_ah_attr, static_rate); F(ibv_ah_attr, is_global); F(ibv_ah_attr, port_num);

	S(ibv_qp_attr);
	F(ibv_qp_attr, qp_state); F(ibv_qp_attr, cur_qp_state); F(ibv_qp_attr, path_mtu);
	F(ibv_qp_attr, path_mig_state); F(ibv_qp_attr, qkey); F(ibv_qp_attr, rq_psn); F(ibv_qp_attr, sq_psn);
	F(ibv_qp_attr, dest_qp_num); F(ibv_qp_attr, qp_access_flags); F(ibv_qp_attr, cap);
	F(ibv_qp_attr, ah_attr); F(ibv_qp_attr, alt_ah_attr); F(ibv_qp_attr, pkey_index);
	F(ibv_qp_attr, alt_pkey_index); F(ibv_qp_attr, en_sqd_async_notify); F(ibv_qp_attr, sq_draining);
	F(ibv_qp_attr, max_rd_atomic); F(ibv_qp_attr, max_dest_rd_atomic); F(ibv_qp_attr, min_rnr_timer);
	F(ibv_qp_attr, port_num); F(ibv_qp_attr, timeout); F(ibv_qp_attr, retry_cnt); F(ibv_qp_attr, rnr_retry);
	F(ibv_qp_attr, alt_port_num); F(ibv_qp_attr, alt_timeout); F(ibv_qp_attr, rate_limit);

	S(ibv_sge);
	F(ibv_sge, addr); F(ibv_sge, length); F(ibv_sge, lkey);

	S(ibv_send_wr);
	F(ibv_send_wr, wr_id); F(ibv_send_wr, next); F(ibv_send_wr, sg_list); F(ibv_send_wr, num_sge);
	F(ibv_send_wr, opcode); F(ibv_send_wr, send_flags); F(ibv_send_wr, imm_data);
	F(ibv_send_wr, invalidate_rkey); F(ibv_send_wr, wr); F(ibv_send_wr, wr.rdma);
	F(ibv_send_wr, wr.rdma.remote_addr); F(ibv_send_wr, wr.rdma.rkey); F(ibv_send_wr, wr.atomic);
	F(ibv_send_wr, wr.atomic.remote_addr); F(ibv_send_wr, wr.atomic.compare_add);
	F(ibv_send_wr, wr.atomic.swap); F(ibv_send_wr, wr.atomic.rkey); F(ibv_send_wr, bind_mw);
	F(ibv_send_wr, bind_mw.mw); F(ibv_send_wr, bind_mw.rkey); F(ibv_send_wr, bind_mw.bind_info);
	F(ibv_send_wr, bind_mw.bind_info.mr); F(ibv_send_wr, bind_mw.bind_info.addr);
	F(ibv_send_wr, bind_mw.bind_info.length); F(ibv_send_wr, bind_mw.bind_info.mw_access_flags);
	F(ibv_send_wr, tso); F(ibv_send_wr, tso.hdr); F(ibv_send_wr, tso.hdr_sz); F(ibv_send_wr, tso.mss);

	S(ibv_recv_wr);
	F(ibv_recv_wr, wr_id); F(ibv_recv_wr, next); F(ibv_recv_wr, sg_list); F(ibv_recv_wr, num_sge);

	S(ibv_wc);
	F(ibv_wc, wr_id); F(ibv_wc, status); F(ibv_wc, opcode); F(ibv_wc, vendor_err); F(ibv_wc, byte_len);
	F(ibv_wc, imm_data); F(ibv_wc, invalidated_rkey); F(ibv_wc, qp_num); F(ibv_wc, src_qp);
	F(ibv_wc, wc_flags); F(ibv_wc, pkey_index); F(ibv_wc, slid); F(ibv_wc, sl); F(ibv_wc, dlid_path_bits);

	S(ibv_async_event);
	F(ibv_async_event, element); F(ibv_async_event, element.cq); F(ibv_async_event, element.qp);
	F(ibv_async_event, element.srq); F(ibv_async_event, element.wq); F(ibv_async_event, element.port_num);
	F(ibv_async_event, event_type);

	/* libc, for waiting on the channel fds */
	S(pollfd);
	F(pollfd, fd); F(pollfd, events); F(pollfd, revents);
}

static void derived(void)
{
	VALUE("VERBS_ABI_IS_EXTENDED", (intptr_t)__VERBS_ABI_IS_EXTENDED);
	VALUE("VCTX_QUERY_PORT", VCTX_REL(query_port));
	VALUE("VCTX_SZ", VCTX_REL(sz));
	/* verbs_get_ctx_op(ctx, query_port) is non-NULL only when vctx->sz reaches this */
	VALUE("VCTX_QUERY_PORT_MIN_SZ",
	      sizeof(struct verbs_context) - offsetof(struct verbs_context, query_port));
	/* the exported ibv_query_port fills struct _compat_ibv_port_attr (private to libibverbs):
	 * the public struct without its last member */
	VALUE("PORT_ATTR_COMPAT_SIZE", offsetof(struct ibv_port_attr, port_cap_flags2));
}

static void enums(void)
{
	E(IBV_WR_RDMA_WRITE); E(IBV_WR_RDMA_WRITE_WITH_IMM); E(IBV_WR_SEND); E(IBV_WR_SEND_WITH_IMM);
	E(IBV_WR_RDMA_READ); E(IBV_WR_ATOMIC_CMP_AND_SWP); E(IBV_WR_ATOMIC_FETCH_AND_ADD);
	E(IBV_WR_LOCAL_INV); E(IBV_WR_BIND_MW); E(IBV_WR_SEND_WITH_INV); E(IBV_WR_ATOMIC_WRITE);

	E(IBV_WC_SEND); E(IBV_WC_RDMA_WRITE); E(IBV_WC_RDMA_READ); E(IBV_WC_COMP_SWAP); E(IBV_WC_FETCH_ADD);
	E(IBV_WC_BIND_MW); E(IBV_WC_LOCAL_INV); E(IBV_WC_ATOMIC_WRITE); E(IBV_WC_RECV);
	E(IBV_WC_RECV_RDMA_WITH_IMM);

	E(IBV_WC_SUCCESS); E(IBV_WC_LOC_LEN_ERR); E(IBV_WC_LOC_QP_OP_ERR); E(IBV_WC_LOC_EEC_OP_ERR);
	E(IBV_WC_LOC_PROT_ERR); E(IBV_WC_WR_FLUSH_ERR); E(IBV_WC_MW_BIND_ERR); E(IBV_WC_BAD_RESP_ERR);
	E(IBV_WC_LOC_ACCESS_ERR); E(IBV_WC_REM_INV_REQ_ERR); E(IBV_WC_REM_ACCESS_ERR); E(IBV_WC_REM_OP_ERR);
	E(IBV_WC_RETRY_EXC_ERR); E(IBV_WC_RNR_RETRY_EXC_ERR); E(IBV_WC_LOC_RDD_VIOL_ERR);
	E(IBV_WC_REM_INV_RD_REQ_ERR); E(IBV_WC_REM_ABORT_ERR); E(IBV_WC_INV_EECN_ERR);
	E(IBV_WC_INV_EEC_STATE_ERR); E(IBV_WC_FATAL_ERR); E(IBV_WC_RESP_TIMEOUT_ERR); E(IBV_WC_GENERAL_ERR);

	E(IBV_WC_GRH); E(IBV_WC_WITH_IMM); E(IBV_WC_IP_CSUM_OK); E(IBV_WC_WITH_INV);

	E(IBV_ACCESS_LOCAL_WRITE); E(IBV_ACCESS_REMOTE_WRITE); E(IBV_ACCESS_REMOTE_READ);
	E(IBV_ACCESS_REMOTE_ATOMIC); E(IBV_ACCESS_MW_BIND); E(IBV_ACCESS_ZERO_BASED); E(IBV_ACCESS_ON_DEMAND);
	E(IBV_ACCESS_HUGETLB); E(IBV_ACCESS_RELAXED_ORDERING);

	E(IBV_QPS_RESET); E(IBV_QPS_INIT); E(IBV_QPS_RTR); E(IBV_QPS_RTS); E(IBV_QPS_SQD); E(IBV_QPS_SQE);
	E(IBV_QPS_ERR); E(IBV_QPS_UNKNOWN);

	E(IBV_QP_STATE); E(IBV_QP_CUR_STATE); E(IBV_QP_EN_SQD_ASYNC_NOTIFY); E(IBV_QP_ACCESS_FLAGS);
	E(IBV_QP_PKEY_INDEX); E(IBV_QP_PORT); E(IBV_QP_QKEY); E(IBV_QP_AV); E(IBV_QP_PATH_MTU);
	E(IBV_QP_TIMEOUT); E(IBV_QP_RETRY_CNT); E(IBV_QP_RNR_RETRY); E(IBV_QP_RQ_PSN);
	E(IBV_QP_MAX_QP_RD_ATOMIC); E(IBV_QP_ALT_PATH); E(IBV_QP_MIN_RNR_TIMER); E(IBV_QP_SQ_PSN);
	E(IBV_QP_MAX_DEST_RD_ATOMIC); E(IBV_QP_PATH_MIG_STATE); E(IBV_QP_CAP); E(IBV_QP_DEST_QPN);
	E(IBV_QP_RATE_LIMIT);

	E(IBV_SEND_FENCE); E(IBV_SEND_SIGNALED); E(IBV_SEND_SOLICITED); E(IBV_SEND_INLINE);
	E(IBV_SEND_IP_CSUM);

	E(IBV_MW_TYPE_1); E(IBV_MW_TYPE_2);

	E(IBV_MTU_256); E(IBV_MTU_512); E(IBV_MTU_1024); E(IBV_MTU_2048); E(IBV_MTU_4096);

	E(IBV_QPT_RC);

	E(IBV_SRQ_MAX_WR); E(IBV_SRQ_LIMIT);

	E(IBV_PORT_NOP); E(IBV_PORT_DOWN); E(IBV_PORT_INIT); E(IBV_PORT_ARMED); E(IBV_PORT_ACTIVE);
	E(IBV_PORT_ACTIVE_DEFER);

	E(IBV_LINK_LAYER_UNSPECIFIED); E(IBV_LINK_LAYER_INFINIBAND); E(IBV_LINK_LAYER_ETHERNET);

	E(IBV_DEVICE_MEM_WINDOW); E(IBV_DEVICE_MEM_WINDOW_TYPE_2A); E(IBV_DEVICE_MEM_WINDOW_TYPE_2B);

	E(IBV_ATOMIC_NONE); E(IBV_ATOMIC_HCA); E(IBV_ATOMIC_GLOB);

	E(F_GETFL); E(F_SETFL); E(O_NONBLOCK); E(POLLIN); E(EFD_NONBLOCK); E(EFD_CLOEXEC);

	E(IBV_EVENT_CQ_ERR); E(IBV_EVENT_QP_FATAL); E(IBV_EVENT_QP_REQ_ERR); E(IBV_EVENT_QP_ACCESS_ERR);
	E(IBV_EVENT_COMM_EST); E(IBV_EVENT_SQ_DRAINED); E(IBV_EVENT_PATH_MIG); E(IBV_EVENT_PATH_MIG_ERR);
	E(IBV_EVENT_DEVICE_FATAL); E(IBV_EVENT_PORT_ACTIVE); E(IBV_EVENT_PORT_ERR); E(IBV_EVENT_LID_CHANGE);
	E(IBV_EVENT_PKEY_CHANGE); E(IBV_EVENT_SM_CHANGE); E(IBV_EVENT_SRQ_ERR);
	E(IBV_EVENT_SRQ_LIMIT_REACHED); E(IBV_EVENT_QP_LAST_WQE_REACHED); E(IBV_EVENT_CLIENT_REREGISTER);
	E(IBV_EVENT_GID_CHANGE); E(IBV_EVENT_WQ_FATAL);
}

int main(void)
{
	structs();
	derived();
	enums();
	return 0;
}
