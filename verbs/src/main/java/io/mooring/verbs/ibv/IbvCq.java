package io.mooring.verbs.ibv;

import static io.mooring.verbs.ibv.IbvCalls.callAddress;
import static io.mooring.verbs.ibv.IbvCalls.callInt;
import static io.mooring.verbs.ibv.IbvCalls.callLong;
import static io.mooring.verbs.ibv.IbvCalls.callVoid;
import static io.mooring.verbs.ibv.IbvProvider.errnoOf;
import static io.mooring.verbs.ibv.IbvStructs.offsetOf;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.mooring.verbs.Errno;
import io.mooring.verbs.spi.CompletionSink;
import io.mooring.verbs.spi.CqOps;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A completion queue with its own completion channel. Polling reuses one preallocated {@code ibv_wc} array
 * (nothing is allocated per poll); the channel's fd is non-blocking, and {@link #awaitEvent} sleeps in
 * {@code poll(2)} so a waiting dispatcher costs no CPU and a timeout needs no signal. Beside the channel's fd it polls
 * an eventfd of its own, which {@link #wake} writes: another thread cuts the sleep short at once.
 */
@SuppressWarnings("restricted") // reads structs at the pointers libibverbs returns; native access is this module's
final class IbvCq implements CqOps {
    /** Work completions fetched per {@code ibv_poll_cq} call. */
    private static final int BATCH = 32;
    private static final long WC_SIZE = IbvStructs.WC.byteSize();
    /** The longest single poll(2) sleep, so an interrupt is noticed within this many milliseconds. */
    private static final int MAX_SLEEP_MILLIS = 100;
    /** Where the eventfd's {@code pollfd} starts, behind the channel's. */
    private static final long WAKE_POLLFD = IbvStructs.POLLFD.byteSize();

    final IbvContext context;
    final String name;
    private final NativeBlock block = new NativeBlock();
    private final MemorySegment wcs;
    private final MemorySegment pollFd;
    private final MemorySegment eventCq;
    private final MemorySegment eventContext;
    /** What {@link #wake} writes (read by the kernel only) and where a wake is read back into (under the event lock). */
    private final MemorySegment one;
    private final MemorySegment woken;
    private final ReentrantLock eventLock = new ReentrantLock();
    private int wakeFd;            // the eventfd; -1 once closed (guarded by this)
    private MemorySegment channel; // null once destroyed
    final MemorySegment cq;        // the ibv_cq; NULL once destroyed
    private boolean cqDestroyed;

    IbvCq(IbvContext context, int capacity) {
        this.context = context;
        this.name = "cq on " + context.name;
        MemorySegment ch = MemorySegment.NULL;
        MemorySegment created = MemorySegment.NULL;
        int wake = -1;
        try {
            wake = callInt(Ibv.EVENTFD, Ibv.errnoState(), 0, IbvStructs.EFD_NONBLOCK | IbvStructs.EFD_CLOEXEC);
            if (wake < 0) throw IbvErrors.fail("eventfd", Ibv.errno(), "the wake-up of a cq on " + context.name);
            ch = callAddress(Ibv.CREATE_COMP_CHANNEL, Ibv.errnoState(), context.ctx);
            if (ch.equals(MemorySegment.NULL)) throw IbvErrors.fail("ibv_create_comp_channel", Ibv.errno(), context.name);
            ch = ch.reinterpret(IbvStructs.COMP_CHANNEL.byteSize());
            setNonBlocking(ch.get(JAVA_INT, offsetOf(IbvStructs.COMP_CHANNEL, "fd")), "completion channel on " + context.name);
            created = callAddress(Ibv.CREATE_CQ, Ibv.errnoState(), context.ctx, capacity, MemorySegment.NULL, ch,
                    0);
            if (created.equals(MemorySegment.NULL)) {
                throw IbvErrors.fail("ibv_create_cq", Ibv.errno(), context.name + " (capacity " + capacity + ")");
            }
        } catch (RuntimeException | Error e) {
            // nothing half-made survives: the channel goes if the CQ could not be created
            if (!ch.equals(MemorySegment.NULL)) destroyChannelQuietly(ch);
            if (wake >= 0) callInt(Ibv.CLOSE, Ibv.errnoState(), wake);
            block.free();
            throw e;
        }
        this.wakeFd = wake;
        this.channel = ch;
        this.cq = created.reinterpret(IbvStructs.CQ.byteSize());
        this.wcs = block.allocate(IbvStructs.WC, BATCH);
        this.pollFd = block.allocate(IbvStructs.POLLFD, 2);
        this.eventCq = block.allocate(ADDRESS);
        this.eventContext = block.allocate(ADDRESS);
        this.one = block.allocate(JAVA_LONG);
        this.woken = block.allocate(JAVA_LONG);
        one.set(JAVA_LONG, 0, 1);
        pollFd.set(JAVA_INT, IbvStructs.POLLFD_FD, ch.get(JAVA_INT, offsetOf(IbvStructs.COMP_CHANNEL, "fd")));
        pollFd.set(JAVA_SHORT, IbvStructs.POLLFD_EVENTS, (short) IbvStructs.POLLIN);
        pollFd.set(JAVA_INT, WAKE_POLLFD + IbvStructs.POLLFD_FD, wake);
        pollFd.set(JAVA_SHORT, WAKE_POLLFD + IbvStructs.POLLFD_EVENTS, (short) IbvStructs.POLLIN);
        context.cqs.put(cq.address(), this);
    }

    /** Called holding the public CQ's poll lock, which also guards {@link #wcs}. */
    @Override
    public int poll(int max, CompletionSink sink) {
        int total = 0;
        while (total < max) {
            int want = Math.min(max - total, BATCH);
            int n = callInt(Ibv.OP_POLL_CQ, context.pollCq, cq, want, wcs);
            if (n < 0) throw IbvErrors.fail("ibv_poll_cq", -n > 0 ? -n : Errno.EIO.number(), name);
            for (int i = 0; i < n; i++) decode(wcs, i * WC_SIZE, sink);
            total += n;
            if (n < want) break;
        }
        return total;
    }

    /**
     * Hands one {@code ibv_wc} to the sink. Only {@code wr_id}, {@code status}, {@code qp_num} and
     * {@code vendor_err} are valid in a failed one (ibv_poll_cq(3)), and {@code vendor_err} only there: the rest is
     * passed as 0, as a driver may leave what an earlier completion wrote in this array slot. Immediate data comes
     * out of big-endian.
     */
    static void decode(MemorySegment wcs, long base, CompletionSink sink) {
        long wrId = wcs.get(JAVA_LONG, base + IbvStructs.WC_WR_ID);
        int status = wcs.get(JAVA_INT, base + IbvStructs.WC_STATUS);
        int qpn = wcs.get(JAVA_INT, base + IbvStructs.WC_QP_NUM);
        if (status != IbvStructs.IBV_WC_SUCCESS) {
            sink.completion(wrId, status, 0, wcs.get(JAVA_INT, base + IbvStructs.WC_VENDOR_ERR), 0, 0, 0, qpn);
            return;
        }
        int flags = wcs.get(JAVA_INT, base + IbvStructs.WC_WC_FLAGS);
        boolean withImm = (flags & IbvStructs.IBV_WC_WITH_IMM) != 0;
        int imm = withImm ? wcs.get(IbvStructs.BE32, base + IbvStructs.WC_IMM_DATA) : 0;
        sink.completion(wrId, status, wcs.get(JAVA_INT, base + IbvStructs.WC_OPCODE), 0,
                wcs.get(JAVA_INT, base + IbvStructs.WC_BYTE_LEN), imm, flags, qpn);
    }

    @Override
    public void requestNotify() {
        int rc = callInt(Ibv.OP_REQ_NOTIFY_CQ, context.reqNotifyCq, cq, 0);
        if (rc != 0) throw IbvErrors.fail("ibv_req_notify_cq", rc > 0 ? rc : -rc, name);
    }

    @Override
    public boolean awaitEvent(long timeoutNanos) throws InterruptedException {
        long deadline = System.nanoTime() + Math.max(0, timeoutNanos);
        eventLock.lockInterruptibly();
        try {
            while (true) {
                if (Thread.interrupted()) throw new InterruptedException();
                if (takeEvent()) return true;
                long left = deadline - System.nanoTime();
                if (left <= 0) return false;
                int millis = (int) Math.min(MAX_SLEEP_MILLIS, Math.max(1, TimeUnit.NANOSECONDS.toMillis(left + 999_999)));
                int n = callInt(Ibv.POLL, Ibv.errnoState(), pollFd, 2L, millis);
                if (n < 0 && Ibv.errno() != Errno.EINTR.number()) {
                    throw IbvErrors.fail("poll", Ibv.errno(), "completion channel of " + name);
                }
                if (n > 0 && (pollFd.get(JAVA_SHORT, WAKE_POLLFD + IbvStructs.POLLFD_REVENTS) & IbvStructs.POLLIN) != 0) {
                    callLong(Ibv.READ, Ibv.errnoState(), wakeFd, woken, JAVA_LONG.byteSize()); // every wake so far
                    return true;
                }
            }
        } finally {
            eventLock.unlock();
        }
    }

    /** {@code ibv_get_cq_event} on the non-blocking channel and its acknowledgement; false if none is pending. */
    private boolean takeEvent() {
        int rc = callInt(Ibv.GET_CQ_EVENT, Ibv.errnoState(), channel, eventCq, eventContext);
        if (rc != 0) {
            int errno = Ibv.errno();
            if (errno == Errno.EAGAIN.number() || errno == Errno.EINTR.number()) return false;
            throw IbvErrors.fail("ibv_get_cq_event", errno, name);
        }
        callVoid(Ibv.ACK_CQ_EVENTS, eventCq.get(ADDRESS, 0), 1);
        return true;
    }

    /** Writes the eventfd; under this CQ's lock, so never after {@link #destroy} closed it (its number may be reused). */
    @Override
    public synchronized void wake() {
        if (wakeFd >= 0) callLong(Ibv.WRITE, Ibv.errnoState(), wakeFd, one, JAVA_LONG.byteSize());
    }

    /**
     * Destroys the CQ, then its channel. A failure leaves exactly what was not destroyed, so a retry continues
     * where this stopped.
     */
    @Override
    public void destroy() {
        synchronized (this) {
            if (!cqDestroyed) {
                int rc = callInt(Ibv.DESTROY_CQ, Ibv.errnoState(), cq);
                if (rc != 0) throw IbvErrors.fail("ibv_destroy_cq", errnoOf(rc), name);
                cqDestroyed = true;
                context.cqs.remove(cq.address(), this);
            }
            if (channel != null) {
                int rc = callInt(Ibv.DESTROY_COMP_CHANNEL, Ibv.errnoState(), channel);
                if (rc != 0) throw IbvErrors.fail("ibv_destroy_comp_channel", errnoOf(rc), name);
                channel = null;
            }
            if (wakeFd >= 0) callInt(Ibv.CLOSE, Ibv.errnoState(), wakeFd);
            wakeFd = -1;
            block.free();
        }
    }

    private static void destroyChannelQuietly(MemorySegment ch) {
        try {
            callInt(Ibv.DESTROY_COMP_CHANNEL, Ibv.errnoState(), ch);
        } catch (RuntimeException ignored) {
            // the creation failure is what the caller reports
        }
    }

    /** {@code fcntl(fd, F_SETFL, flags | O_NONBLOCK)}. */
    static void setNonBlocking(int fd, String what) {
        int flags = callInt(Ibv.FCNTL_GET, Ibv.errnoState(), fd, IbvStructs.F_GETFL);
        if (flags < 0) throw IbvErrors.fail("fcntl(F_GETFL)", Ibv.errno(), what);
        int rc = callInt(Ibv.FCNTL_SET, Ibv.errnoState(), fd, IbvStructs.F_SETFL, flags | IbvStructs.O_NONBLOCK);
        if (rc < 0) throw IbvErrors.fail("fcntl(F_SETFL)", Ibv.errno(), what);
    }
}
