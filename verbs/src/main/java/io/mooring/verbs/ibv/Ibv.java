package io.mooring.verbs.ibv;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.mooring.verbs.VerbsException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;

/**
 * The downcalls: exported libibverbs (and three libc) functions bound to their symbols, and the static-inline
 * verbs bound by signature only, to be invoked with a function pointer read from {@code ctx->ops}
 * ({@link IbvStructs#CONTEXT_OPS_POST_SEND} and friends).
 *
 * <p>Loading never fails: if {@code libibverbs.so.1} (or one of its symbols) is missing, the handles are null
 * and {@link #UNAVAILABLE} says why; {@link IbvProvider} checks it before touching anything. Every function
 * that reports failure through {@code errno} is bound with {@code captureCallState("errno")}: its handle takes
 * a capture segment after the (optional) function pointer; {@link #errnoState()} and {@link #errno()} are the
 * calling thread's segment and its value after the call. The data-path verbs return their error as a value and
 * capture nothing.
 */
@SuppressWarnings("restricted") // binds libibverbs' functions with their C signatures
final class Ibv {
    static final String LIBRARY = "libibverbs.so.1";

    private Ibv() {}

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CAPTURE = Linker.Option.captureStateLayout();
    private static final long ERRNO_OFFSET = CAPTURE.byteOffset(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option ERRNO = Linker.Option.captureCallState("errno");
    /** One capture segment per thread (control path only); GC-managed so threads leave nothing behind. */
    private static final ThreadLocal<MemorySegment> ERRNO_STATE =
            ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(CAPTURE));

    private static final List<String> MISSING = new ArrayList<>();
    private static final String LOAD_FAILURE;
    private static final SymbolLookup LIB;

    static {
        SymbolLookup lib = null;
        String failure = null;
        try {
            lib = SymbolLookup.libraryLookup(LIBRARY, Arena.global());
        } catch (IllegalCallerException e) {
            failure = "cannot load " + LIBRARY + " (" + e.getMessage() + "): " + VerbsException.NATIVE_ACCESS_HINT;
        } catch (IllegalArgumentException | UnsupportedOperationException e) {
            failure = "cannot load " + LIBRARY + " (" + e.getMessage() + "): install rdma-core's libibverbs1 and"
                    + " ibverbs-providers, or use mooring.provider=soft";
        }
        LIB = lib;
        LOAD_FAILURE = failure;
    }

    private static final ValueLayout C_INT = JAVA_INT;
    private static final ValueLayout C_PTR = ADDRESS;

    // ---- exported libibverbs ------------------------------------------------------------------------------------

    /** {@code struct ibv_device **ibv_get_device_list(int *num_devices)} */
    static final MethodHandle GET_DEVICE_LIST = ibv("ibv_get_device_list", FunctionDescriptor.of(C_PTR, C_PTR), true);
    /** {@code void ibv_free_device_list(struct ibv_device **list)} */
    static final MethodHandle FREE_DEVICE_LIST = ibv("ibv_free_device_list", FunctionDescriptor.ofVoid(C_PTR), false);
    /** {@code const char *ibv_get_device_name(struct ibv_device *device)} */
    static final MethodHandle GET_DEVICE_NAME = ibv("ibv_get_device_name", FunctionDescriptor.of(C_PTR, C_PTR), false);
    /** {@code struct ibv_context *ibv_open_device(struct ibv_device *device)} */
    static final MethodHandle OPEN_DEVICE = ibv("ibv_open_device", FunctionDescriptor.of(C_PTR, C_PTR), true);
    /** {@code int ibv_close_device(struct ibv_context *context)} */
    static final MethodHandle CLOSE_DEVICE = ibv("ibv_close_device", FunctionDescriptor.of(C_INT, C_PTR), true);
    /** {@code int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *attr)} */
    static final MethodHandle QUERY_DEVICE = ibv("ibv_query_device", FunctionDescriptor.of(C_INT, C_PTR, C_PTR), true);
    /** The exported compat {@code ibv_query_port(ctx, uint8_t port, struct _compat_ibv_port_attr *)}. */
    static final MethodHandle QUERY_PORT_COMPAT = ibv("ibv_query_port",
            FunctionDescriptor.of(C_INT, C_PTR, JAVA_BYTE, C_PTR), true);
    /** {@code int ibv_query_gid(struct ibv_context *, uint8_t port_num, int index, union ibv_gid *gid)} */
    static final MethodHandle QUERY_GID = ibv("ibv_query_gid",
            FunctionDescriptor.of(C_INT, C_PTR, JAVA_BYTE, C_INT, C_PTR), true);
    /** {@code struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)} */
    static final MethodHandle ALLOC_PD = ibv("ibv_alloc_pd", FunctionDescriptor.of(C_PTR, C_PTR), true);
    /** {@code int ibv_dealloc_pd(struct ibv_pd *pd)} */
    static final MethodHandle DEALLOC_PD = ibv("ibv_dealloc_pd", FunctionDescriptor.of(C_INT, C_PTR), true);
    /** {@code struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)} */
    static final MethodHandle REG_MR = ibv("ibv_reg_mr",
            FunctionDescriptor.of(C_PTR, C_PTR, C_PTR, JAVA_LONG, C_INT), true);
    /** {@code int ibv_dereg_mr(struct ibv_mr *mr)} */
    static final MethodHandle DEREG_MR = ibv("ibv_dereg_mr", FunctionDescriptor.of(C_INT, C_PTR), true);
    /** {@code struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)} */
    static final MethodHandle CREATE_COMP_CHANNEL = ibv("ibv_create_comp_channel",
            FunctionDescriptor.of(C_PTR, C_PTR), true);
    /** {@code int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)} */
    static final MethodHandle DESTROY_COMP_CHANNEL = ibv("ibv_destroy_comp_channel",
            FunctionDescriptor.of(C_INT, C_PTR), true);
    /** {@code struct ibv_cq *ibv_create_cq(ctx, int cqe, void *cq_context, struct ibv_comp_channel *, int vector)} */
    static final MethodHandle CREATE_CQ = ibv("ibv_create_cq",
            FunctionDescriptor.of(C_PTR, C_PTR, C_INT, C_PTR, C_PTR, C_INT), true);
    /** {@code int ibv_destroy_cq(struct ibv_cq *cq)} */
    static final MethodHandle DESTROY_CQ = ibv("ibv_destroy_cq", FunctionDescriptor.of(C_INT, C_PTR), true);
    /** {@code int ibv_get_cq_event(struct ibv_comp_channel *, struct ibv_cq **cq, void **cq_context)} */
    static final MethodHandle GET_CQ_EVENT = ibv("ibv_get_cq_event",
            FunctionDescriptor.of(C_INT, C_PTR, C_PTR, C_PTR), true);
    /** {@code void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)} */
    static final MethodHandle ACK_CQ_EVENTS = ibv("ibv_ack_cq_events", FunctionDescriptor.ofVoid(C_PTR, C_INT), false);
    /** {@code struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)} */
    static final MethodHandle CREATE_QP = ibv("ibv_create_qp", FunctionDescriptor.of(C_PTR, C_PTR, C_PTR), true);
    /** {@code int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask)} */
    static final MethodHandle MODIFY_QP = ibv("ibv_modify_qp", FunctionDescriptor.of(C_INT, C_PTR, C_PTR, C_INT), true);
    /** {@code int ibv_query_qp(qp, struct ibv_qp_attr *, int attr_mask, struct ibv_qp_init_attr *)} */
    static final MethodHandle QUERY_QP = ibv("ibv_query_qp",
            FunctionDescriptor.of(C_INT, C_PTR, C_PTR, C_INT, C_PTR), true);
    /** {@code int ibv_destroy_qp(struct ibv_qp *qp)} */
    static final MethodHandle DESTROY_QP = ibv("ibv_destroy_qp", FunctionDescriptor.of(C_INT, C_PTR), true);
    /** {@code struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *srq_init_attr)} */
    static final MethodHandle CREATE_SRQ = ibv("ibv_create_srq", FunctionDescriptor.of(C_PTR, C_PTR, C_PTR), true);
    /** {@code int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask)} */
    static final MethodHandle MODIFY_SRQ = ibv("ibv_modify_srq", FunctionDescriptor.of(C_INT, C_PTR, C_PTR, C_INT),
            true);
    /** {@code int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr)} */
    static final MethodHandle QUERY_SRQ = ibv("ibv_query_srq", FunctionDescriptor.of(C_INT, C_PTR, C_PTR), true);
    /** {@code int ibv_destroy_srq(struct ibv_srq *srq)} */
    static final MethodHandle DESTROY_SRQ = ibv("ibv_destroy_srq", FunctionDescriptor.of(C_INT, C_PTR), true);
    /** {@code int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)} */
    static final MethodHandle GET_ASYNC_EVENT = ibv("ibv_get_async_event",
            FunctionDescriptor.of(C_INT, C_PTR, C_PTR), true);
    /** {@code void ibv_ack_async_event(struct ibv_async_event *event)} */
    static final MethodHandle ACK_ASYNC_EVENT = ibv("ibv_ack_async_event", FunctionDescriptor.ofVoid(C_PTR), false);

    // ---- static inline verbs: invoked with the function pointer from ctx->ops as first argument -------------------

    /** {@code struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type)} */
    static final MethodHandle OP_ALLOC_MW = pointer(FunctionDescriptor.of(C_PTR, C_PTR, C_INT), true);
    /** {@code int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)}: errno as value */
    static final MethodHandle OP_BIND_MW = pointer(FunctionDescriptor.of(C_INT, C_PTR, C_PTR, C_PTR), false);
    /** {@code int (*dealloc_mw)(struct ibv_mw *mw)} */
    static final MethodHandle OP_DEALLOC_MW = pointer(FunctionDescriptor.of(C_INT, C_PTR), true);
    /** {@code int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)}: count, or negative */
    static final MethodHandle OP_POLL_CQ = dataPath(FunctionDescriptor.of(C_INT, C_PTR, C_INT, C_PTR));
    /** {@code int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only)}: errno as value */
    static final MethodHandle OP_REQ_NOTIFY_CQ = pointer(FunctionDescriptor.of(C_INT, C_PTR, C_INT), false);
    /** {@code int (*post_send)(struct ibv_qp *, struct ibv_send_wr *, struct ibv_send_wr **bad_wr)}: errno as value */
    static final MethodHandle OP_POST_SEND = dataPath(FunctionDescriptor.of(C_INT, C_PTR, C_PTR, C_PTR));
    /** {@code int (*post_recv)(struct ibv_qp *, struct ibv_recv_wr *, struct ibv_recv_wr **bad_wr)}: errno as value */
    static final MethodHandle OP_POST_RECV = dataPath(FunctionDescriptor.of(C_INT, C_PTR, C_PTR, C_PTR));
    /** {@code int (*post_srq_recv)(struct ibv_srq *, struct ibv_recv_wr *, struct ibv_recv_wr **bad_wr)}: errno as value */
    static final MethodHandle OP_POST_SRQ_RECV = dataPath(FunctionDescriptor.of(C_INT, C_PTR, C_PTR, C_PTR));
    /** {@code int (*query_port)(struct ibv_context *, uint8_t, struct ibv_port_attr *, size_t)} (verbs_context) */
    static final MethodHandle OP_QUERY_PORT = pointer(FunctionDescriptor.of(C_INT, C_PTR, JAVA_BYTE, C_PTR, JAVA_LONG),
            true);

    // ---- libc ------------------------------------------------------------------------------------------------------

    /** {@code int fcntl(int fd, int cmd, ...)} with no variadic argument ({@code F_GETFL}). */
    static final MethodHandle FCNTL_GET = libc("fcntl", FunctionDescriptor.of(C_INT, C_INT, C_INT));
    /** {@code int fcntl(int fd, int cmd, int arg)} ({@code F_SETFL}); the third argument is variadic. */
    static final MethodHandle FCNTL_SET = libc("fcntl", FunctionDescriptor.of(C_INT, C_INT, C_INT, C_INT),
            Linker.Option.firstVariadicArg(2));
    /** {@code int poll(struct pollfd *fds, nfds_t nfds, int timeout)} */
    static final MethodHandle POLL = libc("poll", FunctionDescriptor.of(C_INT, C_PTR, JAVA_LONG, C_INT));
    /** {@code int eventfd(unsigned int initval, int flags)} */
    static final MethodHandle EVENTFD = libc("eventfd", FunctionDescriptor.of(C_INT, C_INT, C_INT));
    /** {@code ssize_t write(int fd, const void *buf, size_t count)} */
    static final MethodHandle WRITE = libc("write", FunctionDescriptor.of(JAVA_LONG, C_INT, C_PTR, JAVA_LONG));
    /** {@code ssize_t read(int fd, void *buf, size_t count)} */
    static final MethodHandle READ = libc("read", FunctionDescriptor.of(JAVA_LONG, C_INT, C_PTR, JAVA_LONG));
    /** {@code int close(int fd)} */
    static final MethodHandle CLOSE = libc("close", FunctionDescriptor.of(C_INT, C_INT));

    /** Why the provider cannot work on this machine, or null if every binding is in place. */
    static final String UNAVAILABLE = LOAD_FAILURE != null ? LOAD_FAILURE
            : MISSING.isEmpty() ? null
            : LIBRARY + " lacks " + MISSING + ": rdma-core is too old for Mooring (44 or newer is known to work)";

    /** The calling thread's errno capture segment, to pass to a handle bound with errno capture. */
    static MemorySegment errnoState() {
        return ERRNO_STATE.get();
    }

    /** errno as captured by the calling thread's last call through {@link #errnoState()}. */
    static int errno() {
        return ERRNO_STATE.get().get(JAVA_INT, ERRNO_OFFSET);
    }

    private static MethodHandle ibv(String name, FunctionDescriptor fd, boolean captureErrno) {
        if (LIB == null) return null;
        var symbol = LIB.find(name);
        if (symbol.isEmpty()) {
            MISSING.add(name);
            return null;
        }
        return captureErrno ? LINKER.downcallHandle(symbol.get(), fd, ERRNO) : LINKER.downcallHandle(symbol.get(), fd);
    }

    /**
     * A verb of the data path (post, poll), called through its {@code ctx->ops} pointer as a critical function: the
     * thread does not leave the Java state for it, which saves two state transitions and a safepoint check per call,
     * on every post and every empty poll of a busy loop. Allowed because these calls never block or call back into
     * Java: they fill or drain the provider's queues in user space, at most ringing a doorbell (rxe: one short
     * {@code write} to the device file), so a garbage collection waits for them no longer than for a Java loop.
     */
    private static MethodHandle dataPath(FunctionDescriptor fd) {
        return LINKER.downcallHandle(fd, Linker.Option.critical(false));
    }

    private static MethodHandle pointer(FunctionDescriptor fd, boolean captureErrno) {
        return captureErrno ? LINKER.downcallHandle(fd, ERRNO) : LINKER.downcallHandle(fd);
    }

    private static MethodHandle libc(String name, FunctionDescriptor fd, Linker.Option... extra) {
        var symbol = LINKER.defaultLookup().find(name);
        if (symbol.isEmpty()) {
            MISSING.add(name + " (libc)");
            return null;
        }
        Linker.Option[] options = new Linker.Option[extra.length + 1];
        System.arraycopy(extra, 0, options, 0, extra.length);
        options[extra.length] = ERRNO;
        return LINKER.downcallHandle(symbol.get(), fd, options);
    }

    /** The C string at {@code pointer}. */
    static String string(MemorySegment pointer) {
        return pointer.reinterpret(Long.MAX_VALUE).getString(0);
    }
}
