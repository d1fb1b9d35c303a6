package io.mooring.netty;

import io.netty.channel.Channel;
import io.netty.channel.IoEvent;
import io.netty.channel.IoHandle;
import io.netty.channel.IoRegistration;

/** A Mooring channel's handle on its event loop: it receives no I/O events, and closing it closes the channel. */
final class MooringIoHandle implements IoHandle {
    private final Channel channel;

    MooringIoHandle(Channel channel) {
        this.channel = channel;
    }

    @Override
    public void handle(IoRegistration registration, IoEvent event) {
        throw new UnsupportedOperationException("a Mooring channel has no I/O events: " + event);
    }

    @Override
    public void close() {
        channel.unsafe().close(channel.unsafe().voidPromise());
    }

    @Override
    public String toString() {
        return "MooringIoHandle[" + channel + "]";
    }
}
