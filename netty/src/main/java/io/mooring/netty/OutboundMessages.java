package io.mooring.netty;

import io.mooring.lease.RdmaSession;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelOutboundBuffer;

/**
 * What the next message of a {@link MooringChannel} carries from the head of its outbound buffer's flushed writes: a
 * registered buffer of the session's protection domain as it is (no copy), or a copy that gathers the bytes of as many
 * writes as fit in one message — so that a flush of several small buffers (an HTTP/2 frame's header and payload, say)
 * costs one SEND, not one each, as a socket's {@code writev} sends them in one go.
 */
final class OutboundMessages {
    private OutboundMessages() {}

    /**
     * Whether {@code buf} is posted as it is: all its bytes fit in one message of at most {@code max} bytes, start its
     * block and lie in memory registered with the session's protection domain (another's key is refused by the NIC,
     * and the QP breaks).
     */
    static boolean postsAsIs(ByteBuf buf, int max, RdmaSession s) {
        return buf.readableBytes() <= max && MooringBuffers.isRegistered(buf)
                && MooringBuffers.region(buf).pd() == s.endpoint().pd()
                && MooringBuffers.regionOffset(buf, buf.readerIndex()) == MooringBuffers.blockOf(buf).regionOffset();
    }

    /**
     * A registered copy of the bytes of the flushed writes from the head of {@code in} — which is not posted as it is
     * — up to {@code max} bytes, stopping before a buffer that is. The writes stay in {@code in}: the caller removes
     * the bytes copied ({@code readableBytes()} of the result) once the copy is handed to the session.
     */
    static ByteBuf gather(ChannelOutboundBuffer in, int max, RdmaSession s, ByteBufAllocator registered)
            throws Exception {
        int[] length = {0};
        in.forEachFlushedMessage(msg -> {
            var buf = (ByteBuf) msg;
            if (length[0] > 0 && postsAsIs(buf, max, s)) return false;
            length[0] += Math.min(buf.readableBytes(), max - length[0]);
            return length[0] < max;
        });
        ByteBuf message = registered.directBuffer(length[0], length[0]);
        in.forEachFlushedMessage(msg -> {
            var buf = (ByteBuf) msg;
            message.writeBytes(buf, buf.readerIndex(), Math.min(buf.readableBytes(), message.writableBytes()));
            return message.isWritable();
        });
        return message;
    }
}
