package io.mooring.netty;

import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.netty.channel.AbstractServerChannel;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.ServerSocketChannelConfig;
import java.net.InetSocketAddress;
import java.net.SocketAddress;

/**
 * A Netty server channel over an {@link RdmaListener} of its loop's endpoint: {@code bind} listens on an
 * {@link InetSocketAddress} (port 0: a free one, see {@link #localAddress()}), and each session accepted becomes a
 * {@link MooringChannel} child. It accepts while auto-read is on, or one session per {@code read()}; sessions not
 * accepted yet wait in the listener's backlog. Closing it closes the listener (off the loop) and the sessions nobody
 * accepted; the children stay open.
 */
public final class MooringServerChannel extends AbstractServerChannel implements ServerSocketChannel {
    private final MooringChannelConfig config;
    private final LoopPlace place;
    private volatile RdmaListener listener;
    private volatile boolean open = true;
    private boolean accepting; // the loop's thread only

    /** What {@code ServerBootstrap.channel(MooringServerChannel.class)} makes. */
    public MooringServerChannel() {
        this.config = new MooringChannelConfig(this);
        this.place = new LoopPlace(this);
    }

    @Override
    public ServerSocketChannelConfig config() {
        return config;
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public boolean isActive() {
        return open && listener != null;
    }

    @Override
    public InetSocketAddress localAddress() {
        return (InetSocketAddress) super.localAddress();
    }

    @Override
    public InetSocketAddress remoteAddress() {
        return null;
    }

    @Override
    protected boolean isCompatible(EventLoop loop) {
        return LoopPlace.fits(loop);
    }

    @Override
    protected void doRegister(ChannelPromise promise) {
        place.register(promise, config);
    }

    @Override
    protected void doDeregister() {
        place.deregister();
    }

    @Override
    protected SocketAddress localAddress0() {
        RdmaListener l = listener;
        return l == null ? null : l.address();
    }

    /** Listens on {@code local}, an {@link InetSocketAddress}; the endpoint's bootstrap listens there. */
    @Override
    protected void doBind(SocketAddress local) throws Exception {
        if (!(local instanceof InetSocketAddress address)) {
            throw new IllegalArgumentException("a MooringServerChannel binds to an InetSocketAddress, not " + local);
        }
        listener = place.transport().endpoint().listen(address);
    }

    @Override
    protected void doClose() {
        open = false;
        RdmaListener l = listener;
        if (l != null) Thread.ofVirtual().name("mooring-netty-unbind").start(l::close); // closes untaken sessions
    }

    @Override
    protected void doBeginRead() {
        RdmaListener l = listener;
        if (accepting || !open || l == null) return;
        accepting = true;
        place.whenDone(l::acceptAsync, this::accepted, RdmaSession::closeAsync);
    }

    private void accepted(RdmaSession session, Throwable error) {
        accepting = false;
        if (error != null) {
            if (open) pipeline().fireExceptionCaught(error);
            return;
        }
        if (!open) {
            session.closeAsync();
            return;
        }
        pipeline().fireChannelRead(new MooringChannel(this, session));
        pipeline().fireChannelReadComplete();
        if (config.isAutoRead()) doBeginRead();
    }
}
