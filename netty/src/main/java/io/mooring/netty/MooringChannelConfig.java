package io.mooring.netty;

import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.netty.MooringIoHandler.Transport;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultChannelConfig;
import io.netty.channel.MessageSizeEstimator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.ServerSocketChannelConfig;
import io.netty.channel.socket.SocketChannelConfig;
import java.time.Duration;
import java.util.Map;
import java.util.function.Predicate;

/**
 * A Mooring channel's configuration, a socket's for both channel types ({@link SocketChannelConfig},
 * {@link ServerSocketChannelConfig}, whose accessors go through {@link #setOption}): Netty's generic options
 * (auto-read, water marks, connect timeout, allocator...), {@code SO_LINGER} and {@code ALLOW_HALF_CLOSURE}, the socket
 * options a session meets as it is, and a clear error for any other — {@code IP_TOS} or {@code TCP_FASTOPEN} have
 * no meaning on a session. Unless the application picks an allocator, buffers come from a
 * {@link MooringByteBufAllocator} over the endpoint's arena, so what the pipeline writes is registered already and is
 * sent without a copy.
 */
final class MooringChannelConfig extends DefaultChannelConfig
        implements SocketChannelConfig, ServerSocketChannelConfig {
    private volatile ByteBufAllocator chosen; // the application's ALLOCATOR, or null
    private volatile int lingerSeconds = -1; // SO_LINGER: -1 is the endpoint's request timeout
    private volatile boolean allowHalfClosure;
    private volatile int sendBufferHint; // SO_SNDBUF, SO_RCVBUF: kept to be read back, 0 until set (see setOption)
    private volatile int receiveBufferHint;

    MooringChannelConfig(Channel channel) {
        super(channel);
    }

    /** The channel was registered on a loop of {@code transport}: its allocator is the default. */
    void useTransport(Transport transport) {
        if (chosen == null) super.setAllocator(transport.allocator());
    }

    @Override
    public MooringChannelConfig setAllocator(ByteBufAllocator allocator) {
        chosen = allocator;
        super.setAllocator(allocator);
        return this;
    }

    @Override
    protected void autoReadCleared() {
        if (channel instanceof MooringChannel c) c.clearReadPending();
    }

    /** How long a closed channel's session waits for the messages handed to it (SO_LINGER, see MooringChannel). */
    Duration linger(RdmaEndpoint endpoint) {
        int seconds = lingerSeconds;
        return seconds < 0 ? endpoint.requestTimeout() : Duration.ofSeconds(seconds);
    }

    /** Whether the peer's end of output only ends the input (ALLOW_HALF_CLOSURE) rather than closing the channel. */
    @Override
    public boolean isAllowHalfClosure() {
        return allowHalfClosure;
    }

    @Override
    public Map<ChannelOption<?>, Object> getOptions() {
        return getOptions(super.getOptions(), ChannelOption.SO_LINGER, ChannelOption.ALLOW_HALF_CLOSURE);
    }

    /**
     * Takes Netty's generic options; {@code SO_LINGER} (how many seconds a close waits for what was written to go out:
     * 0 drops what still waits for the peer's credit, -1 — the default — waits the endpoint's request timeout);
     * {@code ALLOW_HALF_CLOSURE}; and the socket options whose intent a session meets already — {@code TCP_NODELAY} true
     * (a message is posted at once), {@code SO_KEEPALIVE} true (the session watches its peer), {@code SO_REUSEADDR} true
     * (the endpoint's listener, a {@code java.net.ServerSocket}, reuses addresses on Linux), {@code SO_BACKLOG} (a
     * hint, as for the kernel: the listener holds {@value RdmaListener#BACKLOG} sessions), {@code SO_SNDBUF} and
     * {@code SO_RCVBUF} (hints too: what a session buffers is its credit window; the value is only read back) — so that
     * applications setting them run unchanged (Netty's bootstrap closes a channel whose option throws).
     *
     * @throws UnsupportedOperationException for an option, or a value, that does not apply to a Mooring channel
     */
    @Override
    public <T> boolean setOption(ChannelOption<T> option, T value) {
        if (option == ChannelOption.SO_LINGER && value instanceof Integer seconds && seconds >= -1) {
            lingerSeconds = seconds;
        } else if (option == ChannelOption.ALLOW_HALF_CLOSURE && value instanceof Boolean allow) {
            allowHalfClosure = allow;
        } else if (option == ChannelOption.SO_SNDBUF && value instanceof Integer bytes && bytes > 0) {
            sendBufferHint = bytes;
        } else if (option == ChannelOption.SO_RCVBUF && value instanceof Integer bytes && bytes > 0) {
            receiveBufferHint = bytes;
        } else if (!super.setOption(option, value) && !MET_BY_A_SESSION.getOrDefault(option, v -> false).test(value)) {
            throw new UnsupportedOperationException("ChannelOption " + option + " = " + value + " does not apply to a"
                    + " Mooring channel (a session over RDMA, not a socket); it takes " + getOptions().keySet() + " and "
                    + MET_BY_A_SESSION.keySet() + " as a session behaves");
        }
        return true;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> T getOption(ChannelOption<T> option) {
        if (option == ChannelOption.TCP_NODELAY || option == ChannelOption.SO_KEEPALIVE
                || option == ChannelOption.SO_REUSEADDR) {
            return (T) Boolean.TRUE;
        }
        if (option == ChannelOption.SO_BACKLOG) return (T) Integer.valueOf(RdmaListener.BACKLOG);
        if (option == ChannelOption.ALLOW_HALF_CLOSURE) return (T) Boolean.valueOf(allowHalfClosure);
        if (option == ChannelOption.SO_LINGER) return (T) Integer.valueOf(lingerSeconds);
        if (option == ChannelOption.SO_SNDBUF) return (T) Integer.valueOf(sendBufferHint);
        if (option == ChannelOption.SO_RCVBUF) return (T) Integer.valueOf(receiveBufferHint);
        return super.getOption(option);
    }

    private static final Map<ChannelOption<?>, Predicate<Object>> MET_BY_A_SESSION = Map.of(
            ChannelOption.TCP_NODELAY, Boolean.TRUE::equals,
            ChannelOption.SO_KEEPALIVE, Boolean.TRUE::equals,
            ChannelOption.SO_REUSEADDR, Boolean.TRUE::equals,
            ChannelOption.SO_BACKLOG, v -> v instanceof Integer n && n > 0);

    // ---- a socket's config, as SocketChannel and ServerSocketChannel applications use it: through setOption --------

    @Override
    public boolean isTcpNoDelay() {
        return true;
    }

    @Override
    public MooringChannelConfig setTcpNoDelay(boolean tcpNoDelay) {
        return set(ChannelOption.TCP_NODELAY, tcpNoDelay);
    }

    @Override
    public int getSoLinger() {
        return lingerSeconds;
    }

    @Override
    public MooringChannelConfig setSoLinger(int soLinger) {
        return set(ChannelOption.SO_LINGER, soLinger);
    }

    @Override
    public boolean isKeepAlive() {
        return true;
    }

    @Override
    public MooringChannelConfig setKeepAlive(boolean keepAlive) {
        return set(ChannelOption.SO_KEEPALIVE, keepAlive);
    }

    @Override
    public MooringChannelConfig setAllowHalfClosure(boolean allowHalfClosure) {
        return set(ChannelOption.ALLOW_HALF_CLOSURE, allowHalfClosure);
    }

    @Override
    public int getBacklog() {
        return RdmaListener.BACKLOG;
    }

    @Override
    public MooringChannelConfig setBacklog(int backlog) {
        return set(ChannelOption.SO_BACKLOG, backlog);
    }

    /** The hint last set (0 if none): a session has no socket send buffer. */
    @Override
    public int getSendBufferSize() {
        return sendBufferHint;
    }

    @Override
    public MooringChannelConfig setSendBufferSize(int sendBufferSize) {
        return set(ChannelOption.SO_SNDBUF, sendBufferSize);
    }

    /** The hint last set (0 if none): a session has no socket receive buffer. */
    @Override
    public int getReceiveBufferSize() {
        return receiveBufferHint;
    }

    @Override
    public MooringChannelConfig setReceiveBufferSize(int receiveBufferSize) {
        return set(ChannelOption.SO_RCVBUF, receiveBufferSize);
    }

    /** @throws UnsupportedOperationException always: a session's packets have no IP traffic class of their own */
    @Override
    public int getTrafficClass() {
        throw doesNotApply(ChannelOption.IP_TOS);
    }

    @Override
    public MooringChannelConfig setTrafficClass(int trafficClass) {
        return set(ChannelOption.IP_TOS, trafficClass);
    }

    /** True: the endpoint listens on a {@code java.net.ServerSocket}, which reuses addresses (as on Linux). */
    @Override
    public boolean isReuseAddress() {
        return true;
    }

    @Override
    public MooringChannelConfig setReuseAddress(boolean reuseAddress) {
        return set(ChannelOption.SO_REUSEADDR, reuseAddress);
    }

    /** @throws UnsupportedOperationException always: a socket's performance preferences mean nothing to a session */
    @Override
    public MooringChannelConfig setPerformancePreferences(int connectionTime, int latency, int bandwidth) {
        throw new UnsupportedOperationException("performance preferences (" + connectionTime + ", " + latency + ", "
                + bandwidth + ") do not apply to a Mooring channel (a session over RDMA, not a socket)");
    }

    private <T> MooringChannelConfig set(ChannelOption<T> option, T value) {
        setOption(option, value);
        return this;
    }

    private UnsupportedOperationException doesNotApply(ChannelOption<?> option) {
        return new UnsupportedOperationException("ChannelOption " + option + " does not apply to a Mooring channel (a"
                + " session over RDMA, not a socket)");
    }

    // ---- Netty's own options, typed for both socket configs ----------------------------------------------------

    @Override
    public MooringChannelConfig setConnectTimeoutMillis(int connectTimeoutMillis) {
        super.setConnectTimeoutMillis(connectTimeoutMillis);
        return this;
    }

    @Override
    @Deprecated
    public MooringChannelConfig setMaxMessagesPerRead(int maxMessagesPerRead) {
        super.setMaxMessagesPerRead(maxMessagesPerRead);
        return this;
    }

    @Override
    public MooringChannelConfig setWriteSpinCount(int writeSpinCount) {
        super.setWriteSpinCount(writeSpinCount);
        return this;
    }

    @Override
    public MooringChannelConfig setRecvByteBufAllocator(RecvByteBufAllocator allocator) {
        super.setRecvByteBufAllocator(allocator);
        return this;
    }

    @Override
    public MooringChannelConfig setAutoRead(boolean autoRead) {
        super.setAutoRead(autoRead);
        return this;
    }

    @Override
    public MooringChannelConfig setAutoClose(boolean autoClose) {
        super.setAutoClose(autoClose);
        return this;
    }

    @Override
    public MooringChannelConfig setMessageSizeEstimator(MessageSizeEstimator estimator) {
        super.setMessageSizeEstimator(estimator);
        return this;
    }

    @Override
    public MooringChannelConfig setWriteBufferWaterMark(WriteBufferWaterMark writeBufferWaterMark) {
        super.setWriteBufferWaterMark(writeBufferWaterMark);
        return this;
    }

    @Override
    @Deprecated
    public MooringChannelConfig setWriteBufferHighWaterMark(int writeBufferHighWaterMark) {
        super.setWriteBufferHighWaterMark(writeBufferHighWaterMark);
        return this;
    }

    @Override
    @Deprecated
    public MooringChannelConfig setWriteBufferLowWaterMark(int writeBufferLowWaterMark) {
        super.setWriteBufferLowWaterMark(writeBufferLowWaterMark);
        return this;
    }
}
