package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lease.RdmaListener;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.DuplexChannel;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.testsuite.transport.socket.SocketShutdownOutputBySelfTest;
import java.nio.channels.ClosedChannelException;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Netty's {@link SocketShutdownOutputBySelfTest} on the Mooring transport. Each of its tests has a
 * {@code java.net.ServerSocket} as the channel's peer, which a Mooring channel cannot reach (it connects to sessions);
 * each is overridden here to take the same steps and make the same checks with a bare {@link RawSessionPeer} in its
 * place — also {@code testWriteAfterShutdownOutputNoWritabilityChange}, which Netty leaves out of its own runs and
 * which runs here.
 */
class MooringSocketShutdownOutputBySelfTest extends SocketShutdownOutputBySelfTest {
    private static final long WAIT_SECONDS = 10;

    @Override
    protected List<BootstrapFactory<Bootstrap>> newFactories() {
        return MooringSuitePermutation.clientSocket();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return MooringSuitePermutation.allocators();
    }

    @Override
    public void testShutdownOutput(Bootstrap cb) throws Throwable {
        var h = new ByteQueue();
        try (RdmaListener listener = MooringSuitePermutation.listen();
                RawSessionPeer peer = MooringSuitePermutation.serverSidePeer()) {
            var ch = (DuplexChannel) cb.handler(h).connect(listener.address()).sync().channel();
            try {
                assertTrue(ch.isActive());
                assertFalse(ch.isOutputShutdown());
                peer.accept(listener);
                ch.writeAndFlush(Unpooled.wrappedBuffer(new byte[] {1})).sync();
                assertEquals(1, peer.read());
                assertTrue(ch.isOpen() && ch.isActive());
                assertFalse(ch.isInputShutdown());
                assertFalse(ch.isOutputShutdown());

                ch.shutdownOutput().sync(); // half-closed: the peer reads the end, and may still write
                assertEquals(-1, peer.read());
                assertTrue(ch.isOpen() && ch.isActive());
                assertFalse(ch.isInputShutdown());
                assertTrue(ch.isOutputShutdown());
                peer.write(1);
                assertEquals((byte) 1, h.queue.poll(WAIT_SECONDS, TimeUnit.SECONDS));
            } finally {
                ch.close().sync();
            }
        }
    }

    @Override
    public void testShutdownOutputAfterClosed(Bootstrap cb) throws Throwable {
        try (RdmaListener listener = MooringSuitePermutation.listen();
                RawSessionPeer peer = MooringSuitePermutation.serverSidePeer()) {
            var ch = (DuplexChannel) cb.handler(new ChannelInboundHandlerAdapter()).connect(listener.address()).sync()
                    .channel();
            peer.accept(listener);
            ch.close().sync();
            assertFailsClosed(ch.shutdownInput());
            assertFailsClosed(ch.shutdownOutput());
        }
    }

    @Override
    public void testShutdownOutputSoLingerNoAssertError(Bootstrap cb) throws Throwable {
        shutdownWithSoLinger(cb, true);
    }

    @Override
    public void testShutdownSoLingerNoAssertError(Bootstrap cb) throws Throwable {
        shutdownWithSoLinger(cb, false);
    }

    private static void shutdownWithSoLinger(Bootstrap cb, boolean outputOnly) throws Throwable {
        try (RdmaListener listener = MooringSuitePermutation.listen();
                RawSessionPeer peer = MooringSuitePermutation.serverSidePeer()) {
            var ch = (DuplexChannel) cb.option(ChannelOption.SO_LINGER, 1).handler(new ChannelInboundHandlerAdapter())
                    .connect(listener.address()).sync().channel();
            try {
                peer.accept(listener);
                (outputOnly ? ch.shutdownOutput() : ch.shutdown()).sync();
                assertEquals(-1, peer.read());
            } finally {
                ch.close().sync();
            }
        }
    }

    @Test
    @Override
    public void testWriteAfterShutdownOutputNoWritabilityChange(TestInfo testInfo) throws Throwable {
        run(testInfo, this::testWriteAfterShutdownOutputNoWritabilityChange);
    }

    /**
     * Writes past the high water mark turn the channel unwritable until flushed; after {@code shutdownOutput()} a write
     * fails and leaves the channel's writability as it was (no event), and the peer read every byte before the end.
     * (Netty disables its own version, which expects the channel still writable after the shutdown: its
     * {@code AbstractChannel} drops the outbound buffer there, so no transport of its is.)
     */
    @Override
    public void testWriteAfterShutdownOutputNoWritabilityChange(Bootstrap cb) throws Throwable {
        var h = new Writability();
        try (RdmaListener listener = MooringSuitePermutation.listen();
                RawSessionPeer peer = MooringSuitePermutation.serverSidePeer()) {
            var ch = (DuplexChannel) cb.option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(4, 8))
                    .handler(h).connect(listener.address()).sync().channel();
            try {
                peer.accept(listener);
                byte[] bytes = {1, 2, 3, 4, 5, 6, 7, 8, 9};
                ChannelFuture written = ch.write(Unpooled.wrappedBuffer(bytes));
                assertFalse(ch.isWritable(), "9 bytes queued, over the high water mark of 8");
                ch.flush();
                written.sync();
                // Netty completes the write's promise, then counts its bytes out (and fires the change) just after.
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
                while (!ch.isWritable() && System.nanoTime() < deadline) Thread.sleep(1);
                assertTrue(ch.isWritable(), "writable again once the bytes are sent");
                for (byte b : bytes) assertEquals(b, peer.read());

                ch.shutdownOutput().sync(); // Netty's AbstractChannel drops the outbound buffer: unwritable from here
                int changes = h.changes.get();
                boolean writable = ch.isWritable();
                ChannelFuture refused = ch.writeAndFlush(Unpooled.wrappedBuffer(bytes));
                assertTrue(refused.await(WAIT_SECONDS, TimeUnit.SECONDS));
                assertFalse(refused.isSuccess(), "a write after shutdownOutput() succeeded");
                assertEquals(writable, ch.isWritable(), "the refused write changed the channel's writability");
                assertEquals(changes, h.changes.get(), "the refused write fired a writability change");
                assertEquals(-1, peer.read(), "the peer reads the end after the bytes written before it");
            } finally {
                ch.close().sync();
            }
        }
    }

    /** Counts the channel's writability changes. */
    private static final class Writability extends ChannelInboundHandlerAdapter {
        final AtomicInteger changes = new AtomicInteger();

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            changes.incrementAndGet();
            ctx.fireChannelWritabilityChanged();
        }
    }

    private static void assertFailsClosed(ChannelFuture f) throws InterruptedException {
        assertTrue(f.await(WAIT_SECONDS, TimeUnit.SECONDS));
        assertInstanceOf(ClosedChannelException.class, f.cause());
    }

    /** The bytes the channel reads, one by one. */
    private static final class ByteQueue extends SimpleChannelInboundHandler<ByteBuf> {
        final BlockingQueue<Byte> queue = new LinkedBlockingQueue<>();

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf msg) {
            while (msg.isReadable()) queue.add(msg.readByte());
        }
    }
}
