package io.mooring.netty;

import io.mooring.lease.RdmaEndpoint;
import io.mooring.verbs.IdleDelivery;
import io.netty.channel.IoHandle;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.IoOps;
import io.netty.channel.IoRegistration;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import java.lang.System.Logger.Level;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Objects;
import java.util.Set;

/**
 * The I/O side of a Netty 4.2 event loop running {@link MooringChannel}s and {@link MooringServerChannel}s over the
 * sessions of one {@link RdmaEndpoint}:
 * <pre>{@code
 * var group = new MultiThreadIoEventLoopGroup(MooringIoHandler.newFactory(endpoint));
 * new ServerBootstrap().group(group).channel(MooringServerChannel.class) ...
 * new Bootstrap().group(group).channel(MooringChannel.class) ...
 * }</pre>
 * Where epoll's loop waits on its fd, this one polls the endpoint's completion queue itself while it has no task
 * ({@link IdleDelivery}, until a task or a scheduled one is due): a completion for one of its channels runs that
 * channel's code at once on the loop, with no hand-off between threads. One loop of a group polls at a time; what the
 * endpoint's dispatcher thread, another loop, or a blocking caller takes meanwhile reaches a channel's loop as a task,
 * and a completion this loop takes for a channel with such tasks queued waits behind them ({@link LoopPlace}), so a
 * channel sees its completions in order. The endpoint stays the application's: it is closed after the group has shut
 * down.
 */
public final class MooringIoHandler implements IoHandler {
    private static final System.Logger LOG = System.getLogger(MooringIoHandler.class.getName());

    private final Transport transport;
    private final IdleDelivery idle;
    private final Set<Registration> registrations = new HashSet<>(); // the loop's thread only
    private volatile Thread loopThread;
    /** Whether the loop delivers completions from its own poll now, and runs none of them already (its thread only). */
    private boolean delivering;

    private MooringIoHandler(Transport transport) {
        this.transport = transport;
        this.idle = transport.endpoint().idleDelivery();
    }

    /** A factory for {@link MultiThreadIoEventLoopGroup}: every loop of the group serves channels of {@code endpoint}. */
    public static IoHandlerFactory newFactory(RdmaEndpoint endpoint) {
        Transport transport = new Transport(Objects.requireNonNull(endpoint, "endpoint"),
                new MooringByteBufAllocator(endpoint.arena()));
        return executor -> new MooringIoHandler(transport);
    }

    /** What a loop's channels share: the endpoint and an allocator over its arena (what received buffers belong to). */
    record Transport(RdmaEndpoint endpoint, MooringByteBufAllocator allocator) {}

    /** Polls the endpoint's CQ until a task or a scheduled one is due, or once without sleeping if one is. */
    @Override
    public int run(IoHandlerContext context) {
        loopThread = Thread.currentThread();
        long nanos = context.canBlock() ? context.delayNanos(System.nanoTime()) : 0;
        delivering = true;
        try {
            return idle.deliverFor(nanos);
        } catch (InterruptedException e) {
            return 0; // taken, as NIO's loop takes one: a group is shut down, not interrupted
        } finally {
            delivering = false;
        }
    }

    /** A task came from another thread: the loop's poll ends. One the loop gives itself finds it awake. */
    @Override
    public void wakeup() {
        if (Thread.currentThread() != loopThread) idle.wake();
    }

    /**
     * Runs {@code task}, what a completion this loop delivers from its own poll brings a channel, at once, and says so;
     * false elsewhere — and within such a task, where a completion comes from a future completed at once — so that the
     * caller queues it instead. Like a task's, its failure is logged.
     */
    boolean runInline(Runnable task) {
        if (Thread.currentThread() != loopThread || !delivering) return false;
        delivering = false;
        try {
            task.run();
        } catch (Throwable e) {
            LOG.log(Level.WARNING, "a completion's task on " + loopThread.getName() + " threw", e);
        } finally {
            delivering = true;
        }
        return true;
    }

    Transport transport() {
        return transport;
    }

    @Override
    public IoRegistration register(IoHandle handle) {
        if (!(handle instanceof MooringIoHandle mooring)) {
            throw new IllegalArgumentException(handle + " is not a Mooring channel's handle: a MooringIoHandler runs"
                    + " MooringChannel and MooringServerChannel only");
        }
        var registration = new Registration(mooring);
        registrations.add(registration);
        return registration;
    }

    @Override
    public boolean isCompatible(Class<? extends IoHandle> handleType) {
        return MooringIoHandle.class.isAssignableFrom(handleType);
    }

    /** The group shuts down: its channels close (each closes its session, off the loop). */
    @Override
    public void prepareToDestroy() {
        for (Registration r : new ArrayList<>(registrations)) {
            try {
                r.handle.close();
            } catch (Exception e) {
                LOG.log(Level.WARNING, "closing " + r.handle + " at the event loop's shutdown failed", e);
            }
        }
    }

    /** A channel's place on this loop; its attachment is the handler. */
    private final class Registration implements IoRegistration {
        private final MooringIoHandle handle;
        private boolean valid = true;

        Registration(MooringIoHandle handle) {
            this.handle = handle;
        }

        @Override
        @SuppressWarnings("unchecked")
        public <T> T attachment() {
            return (T) MooringIoHandler.this;
        }

        /** There are no operations to submit: the loop polls the endpoint's CQ as a whole. */
        @Override
        public long submit(IoOps ops) {
            throw new UnsupportedOperationException("a Mooring channel submits no I/O operations to its event loop");
        }

        @Override
        public boolean isValid() {
            return valid;
        }

        @Override
        public boolean cancel() {
            if (!valid) return false;
            valid = false;
            registrations.remove(this);
            return true;
        }
    }
}
