package io.mooring.netty;

import io.mooring.netty.MooringIoHandler.Transport;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelConfig;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultChannelConfig;

/**
 * A Mooring channel's configuration: Netty's generic options (auto-read, water marks, connect timeout, allocator...),
 * and a clear error for any other — socket options such as {@code TCP_NODELAY} or {@code SO_RCVBUF} have no meaning on
 * a session. Unless the application picks an allocator, buffers come from a {@link MooringByteBufAllocator} over the
 * endpoint's arena, so what the pipeline writes is registered already and is sent without a copy.
 */
final class MooringChannelConfig extends DefaultChannelConfig {
    private volatile ByteBufAllocator chosen; // the application's ALLOCATOR, or null

    MooringChannelConfig(Channel channel) {
        super(channel);
    }

    /** The channel was registered on a loop of {@code transport}: its allocator is the default. */
    void useTransport(Transport transport) {
        if (chosen == null) super.setAllocator(transport.allocator());
    }

    @Override
    public ChannelConfig setAllocator(ByteBufAllocator allocator) {
        chosen = allocator;
        return super.setAllocator(allocator);
    }

    /**
     * @throws UnsupportedOperationException for an option that does not apply to a Mooring channel
     */
    @Override
    public <T> boolean setOption(ChannelOption<T> option, T value) {
        if (super.setOption(option, value)) return true;
        throw new UnsupportedOperationException("ChannelOption " + option + " does not apply to a Mooring channel (a"
                + " session over RDMA, not a socket); it takes " + getOptions().keySet());
    }
}
