package io.mooring.verbs.ibv;

import static io.mooring.verbs.ibv.IbvCalls.callInt;
import static io.mooring.verbs.ibv.IbvCalls.callLong;
import static io.mooring.verbs.ibv.IbvCalls.callVoid;
import static io.mooring.verbs.ibv.IbvStructs.offsetOf;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.mooring.verbs.spi.ProviderThreads;
import java.lang.System.Logger.Level;
import java.lang.foreign.MemorySegment;

/**
 * Reads a context's async events ({@code ibv_get_async_event} on {@code ctx->async_fd}) on a daemon thread and
 * reports them to the public layer's sink (SRQ limits to their SRQ) and through {@link System.Logger} ({@code io.mooring.verbs.ibv.IbvAsyncEvents}): fatal QP, CQ and
 * device errors at WARNING, port changes at INFO, the rest at DEBUG. Each event is acknowledged at once, so
 * {@code ibv_destroy_qp}/{@code ibv_destroy_cq} (which wait for acknowledgements) never block on it.
 *
 * <p>The thread sleeps in {@code poll(2)} on the async fd (made non-blocking) and an eventfd; {@link #stop()}
 * writes the eventfd and joins, so closing a context never waits for an event and the thread is out of
 * native code before {@code ibv_close_device}.
 */
@SuppressWarnings("restricted") // reads structs at the pointers libibverbs returns; native access is this module's
final class IbvAsyncEvents {
    private static final System.Logger LOG = System.getLogger(IbvAsyncEvents.class.getName());

    private final IbvContext context;
    private final NativeBlock block = new NativeBlock();
    private final MemorySegment pollFds;
    private final MemorySegment event;
    private final MemorySegment one;
    private final int wakeFd;
    private final Thread thread;
    private volatile boolean running = true;

    IbvAsyncEvents(IbvContext context) {
        this.context = context;
        this.pollFds = block.allocate(IbvStructs.POLLFD, 2);
        this.event = block.allocate(IbvStructs.ASYNC_EVENT);
        this.one = block.allocate(JAVA_LONG);
        int asyncFd = context.ctx.get(JAVA_INT, offsetOf(IbvStructs.CONTEXT, "async_fd"));
        try {
            IbvCq.setNonBlocking(asyncFd, "async_fd of " + context.name);
            wakeFd = callInt(Ibv.EVENTFD, Ibv.errnoState(), 0, IbvStructs.EFD_NONBLOCK | IbvStructs.EFD_CLOEXEC);
        } catch (RuntimeException | Error e) {
            block.free();
            throw e;
        }
        if (wakeFd < 0) {
            block.free();
            throw IbvErrors.fail("eventfd", Ibv.errno(), "async events of " + context.name);
        }
        long size = IbvStructs.POLLFD.byteSize();
        pollFds.set(JAVA_INT, IbvStructs.POLLFD_FD, asyncFd);
        pollFds.set(JAVA_SHORT, IbvStructs.POLLFD_EVENTS, (short) IbvStructs.POLLIN);
        pollFds.set(JAVA_INT, size + IbvStructs.POLLFD_FD, wakeFd);
        pollFds.set(JAVA_SHORT, size + IbvStructs.POLLFD_EVENTS, (short) IbvStructs.POLLIN);
        thread = Thread.ofPlatform().daemon().name("mooring-ibv-async-" + context.name).start(this::run);
    }

    private void run() {
        try {
            while (running) {
                int n = callInt(Ibv.POLL, Ibv.errnoState(), pollFds, 2L, -1);
                if (n < 0) {
                    if (Ibv.errno() == io.mooring.verbs.Errno.EINTR.number()) continue;
                    LOG.log(Level.ERROR, "async events of " + context.name + ": poll failed with "
                            + io.mooring.verbs.Errno.describe(Ibv.errno()) + "; no more async events are reported");
                    return;
                }
                if (!running) return;
                if ((pollFds.get(JAVA_SHORT, IbvStructs.POLLFD_REVENTS) & IbvStructs.POLLIN) != 0) readOne();
            }
        } catch (Throwable t) {
            LOG.log(Level.ERROR, "async event reader of " + context.name + " failed", t);
        }
    }

    private void readOne() {
        int rc = callInt(Ibv.GET_ASYNC_EVENT, Ibv.errnoState(), context.ctx, event);
        if (rc != 0) return; // EAGAIN: another wakeup consumed it
        int type = event.get(JAVA_INT, offsetOf(IbvStructs.ASYNC_EVENT, "event_type"));
        // found before the acknowledgement, which ibv_destroy_srq/cq wait for: until then the SRQ or CQ cannot be gone
        long element = event.get(ADDRESS, offsetOf(IbvStructs.ASYNC_EVENT, "element")).address();
        IbvSrq limited = type == IbvStructs.IBV_EVENT_SRQ_LIMIT_REACHED ? context.srqs.get(element) : null;
        IbvCq cq = type == IbvStructs.IBV_EVENT_CQ_ERR ? context.cqs.get(element) : null;
        int number = number(type);
        callVoid(Ibv.ACK_ASYNC_EVENT, event);
        LOG.log(level(type), "async event on " + context.name + ": " + typeName(type)
                + (number == 0 ? "" : (isPortEvent(type) ? " on port " : " on qpn ") + number));
        if (limited != null) limited.limitReached(); // after the acknowledgement: a slow listener delays no destroy
        else if (type != IbvStructs.IBV_EVENT_SRQ_LIMIT_REACHED) context.sink.event(type, cq, number);
    }

    /** The QP number of a QP event, the port of a port event, else 0; read before the acknowledgement. */
    private int number(int type) {
        if (isPortEvent(type)) return event.get(JAVA_INT, offsetOf(IbvStructs.ASYNC_EVENT, "element.port_num"));
        if (!isQpEvent(type)) return 0;
        MemorySegment qp = event.get(ADDRESS, offsetOf(IbvStructs.ASYNC_EVENT, "element"));
        return qp.reinterpret(IbvStructs.QP.byteSize()).get(JAVA_INT, IbvStructs.QP_QP_NUM);
    }

    private static boolean isQpEvent(int type) {
        return switch (type) {
            case IbvStructs.IBV_EVENT_QP_FATAL, IbvStructs.IBV_EVENT_QP_REQ_ERR, IbvStructs.IBV_EVENT_QP_ACCESS_ERR,
                 IbvStructs.IBV_EVENT_COMM_EST, IbvStructs.IBV_EVENT_SQ_DRAINED, IbvStructs.IBV_EVENT_PATH_MIG,
                 IbvStructs.IBV_EVENT_PATH_MIG_ERR, IbvStructs.IBV_EVENT_QP_LAST_WQE_REACHED -> true;
            default -> false;
        };
    }

    private static boolean isPortEvent(int type) {
        return switch (type) {
            case IbvStructs.IBV_EVENT_PORT_ACTIVE, IbvStructs.IBV_EVENT_PORT_ERR, IbvStructs.IBV_EVENT_LID_CHANGE,
                 IbvStructs.IBV_EVENT_PKEY_CHANGE, IbvStructs.IBV_EVENT_SM_CHANGE,
                 IbvStructs.IBV_EVENT_CLIENT_REREGISTER, IbvStructs.IBV_EVENT_GID_CHANGE -> true;
            default -> false;
        };
    }

    private static Level level(int type) {
        return switch (type) {
            case IbvStructs.IBV_EVENT_QP_FATAL, IbvStructs.IBV_EVENT_CQ_ERR, IbvStructs.IBV_EVENT_DEVICE_FATAL,
                 IbvStructs.IBV_EVENT_PORT_ERR, IbvStructs.IBV_EVENT_WQ_FATAL -> Level.WARNING;
            case IbvStructs.IBV_EVENT_PORT_ACTIVE, IbvStructs.IBV_EVENT_LID_CHANGE, IbvStructs.IBV_EVENT_PKEY_CHANGE,
                 IbvStructs.IBV_EVENT_SM_CHANGE, IbvStructs.IBV_EVENT_CLIENT_REREGISTER,
                 IbvStructs.IBV_EVENT_GID_CHANGE -> Level.INFO;
            default -> Level.DEBUG; // QP request/access errors also fail a work request, which says more
        };
    }

    static String typeName(int type) {
        return switch (type) {
            case IbvStructs.IBV_EVENT_CQ_ERR -> "CQ_ERR";
            case IbvStructs.IBV_EVENT_QP_FATAL -> "QP_FATAL";
            case IbvStructs.IBV_EVENT_QP_REQ_ERR -> "QP_REQ_ERR";
            case IbvStructs.IBV_EVENT_QP_ACCESS_ERR -> "QP_ACCESS_ERR";
            case IbvStructs.IBV_EVENT_COMM_EST -> "COMM_EST";
            case IbvStructs.IBV_EVENT_SQ_DRAINED -> "SQ_DRAINED";
            case IbvStructs.IBV_EVENT_PATH_MIG -> "PATH_MIG";
            case IbvStructs.IBV_EVENT_PATH_MIG_ERR -> "PATH_MIG_ERR";
            case IbvStructs.IBV_EVENT_DEVICE_FATAL -> "DEVICE_FATAL";
            case IbvStructs.IBV_EVENT_PORT_ACTIVE -> "PORT_ACTIVE";
            case IbvStructs.IBV_EVENT_PORT_ERR -> "PORT_ERR";
            case IbvStructs.IBV_EVENT_LID_CHANGE -> "LID_CHANGE";
            case IbvStructs.IBV_EVENT_PKEY_CHANGE -> "PKEY_CHANGE";
            case IbvStructs.IBV_EVENT_SM_CHANGE -> "SM_CHANGE";
            case IbvStructs.IBV_EVENT_SRQ_ERR -> "SRQ_ERR";
            case IbvStructs.IBV_EVENT_SRQ_LIMIT_REACHED -> "SRQ_LIMIT_REACHED";
            case IbvStructs.IBV_EVENT_QP_LAST_WQE_REACHED -> "QP_LAST_WQE_REACHED";
            case IbvStructs.IBV_EVENT_CLIENT_REREGISTER -> "CLIENT_REREGISTER";
            case IbvStructs.IBV_EVENT_GID_CHANGE -> "GID_CHANGE";
            case IbvStructs.IBV_EVENT_WQ_FATAL -> "WQ_FATAL";
            default -> "event " + type;
        };
    }

    /** Wakes the thread, waits for it to leave native code, and frees what it used. Idempotent. */
    void stop() {
        if (!running) return;
        running = false;
        one.set(JAVA_LONG, 0, 1);
        callLong(Ibv.WRITE, Ibv.errnoState(), wakeFd, one, JAVA_LONG.byteSize());
        ProviderThreads.joinUninterruptibly(thread);
        callInt(Ibv.CLOSE, Ibv.errnoState(), wakeFd);
        block.free();
    }
}
