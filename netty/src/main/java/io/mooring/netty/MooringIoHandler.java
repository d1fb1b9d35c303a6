package io.mooring.netty;

import io.mooring.lease.RdmaEndpoint;
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
import java.util.concurrent.locks.LockSupport;

/**
 * The I/O side of a Netty 4.2 event loop running {@link MooringChannel}s and {@link MooringServerChannel}s over the
 * sessions of one {@link RdmaEndpoint}:
 * <pre>{@code
 * var group = new MultiThreadIoEventLoopGroup(MooringIoHandler.newFactory(endpoint));
 * new ServerBootstrap().group(group).channel(MooringServerChannel.class) ...
 * new Bootstrap().group(group).channel(MooringChannel.class) ...
 * }</pre>
 * There is nothing to poll: the endpoint's dispatcher thread takes every completion and hands what concerns a channel
 * to its event loop as a task ({@code execute}), so the loop only sleeps until a task or a scheduled one is due. The
 * endpoint stays the application's: it is closed after the group has shut down.
 */
public final class MooringIoHandler implements IoHandler {
    private static final System.Logger LOG = System.getLogger(MooringIoHandler.class.getName());

    private final Transport transport;
    private final Set<Registration> registrations = new HashSet<>(); // the loop's thread only
    private volatile Thread loopThread;

    private MooringIoHandler(Transport transport) {
        this.transport = transport;
    }

    /** A factory for {@link MultiThreadIoEventLoopGroup}: every loop of the group serves channels of {@code endpoint}. */
    public static IoHandlerFactory newFactory(RdmaEndpoint endpoint) {
        Transport transport = new Transport(Objects.requireNonNull(endpoint, "endpoint"),
                new MooringByteBufAllocator(endpoint.arena()));
        return executor -> new MooringIoHandler(transport);
    }

    /** What a loop's channels share: the endpoint and an allocator over its arena (what received buffers belong to). */
    record Transport(RdmaEndpoint endpoint, MooringByteBufAllocator allocator) {}

    @Override
    public int run(IoHandlerContext context) {
        loopThread = Thread.currentThread();
        if (context.canBlock()) LockSupport.parkNanos(this, context.delayNanos(System.nanoTime()));
        return 0; // completions come as tasks, which the loop counts itself
    }

    @Override
    public void wakeup() {
        Thread t = loopThread;
        if (t != null) LockSupport.unpark(t);
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

    /** A channel's place on this loop; its attachment is the {@link Transport}. */
    private final class Registration implements IoRegistration {
        private final MooringIoHandle handle;
        private boolean valid = true;

        Registration(MooringIoHandle handle) {
            this.handle = handle;
        }

        @Override
        @SuppressWarnings("unchecked")
        public <T> T attachment() {
            return (T) transport;
        }

        /** There are no operations to submit: completions come as tasks. */
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
