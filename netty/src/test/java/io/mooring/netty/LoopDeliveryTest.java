package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.testing.EmulatedCpus;
import io.mooring.verbs.CompletionDispatcher;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The loop polls its endpoint's completion queue itself ({@link MooringIoHandler}): a channel's completions run on its
 * loop with no hand-off, in order also when other threads deliver some of them as tasks; code run there may not wait
 * for a completion but may close its channel; and a loop outlives its endpoint's close.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class LoopDeliveryTest {
    private static final InetSocketAddress ANY = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
    private final TransportFixture f = new TransportFixture();

    @AfterEach
    void close() throws InterruptedException {
        f.close();
    }

    /** Whether the caller is a channel's loop running what the loop took from the CQ itself. */
    private static boolean deliveredByTheLoop(Channel ch) {
        return ch.eventLoop().inEventLoop() && CompletionDispatcher.isDispatcherThread();
    }

    /** Counts what it reads, and how much of it its loop delivered itself; echoes it if asked to. */
    private static final class Reads extends ChannelInboundHandlerAdapter {
        final Semaphore bytes = new Semaphore(0);
        final AtomicInteger reads = new AtomicInteger();
        final AtomicInteger byTheLoop = new AtomicInteger();
        private final boolean echo;

        Reads(boolean echo) {
            this.echo = echo;
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            reads.incrementAndGet();
            if (deliveredByTheLoop(ctx.channel())) byTheLoop.incrementAndGet();
            int n = ((ByteBuf) msg).readableBytes();
            if (echo) ctx.writeAndFlush(msg);
            else ((ByteBuf) msg).release();
            bytes.release(n);
        }
    }

    @Test
    void aLoopRunsItsChannelsCompletionsWithNoHandOff() throws Exception {
        var served = new Reads(true);
        Channel server = f.serverBootstrap(served).bind(ANY).sync().channel();
        var echoed = new Reads(false);
        Channel client = f.clientBootstrap(echoed).connect(server.localAddress()).sync().channel();
        int rounds = 200;
        for (int i = 0; i < rounds; i++) {
            ByteBuf message = client.alloc().directBuffer(64).writeZero(64);
            client.writeAndFlush(message);
            assertTrue(echoed.bytes.tryAcquire(64, 10, TimeUnit.SECONDS), "no echo of round " + i);
        }
        // Soft: 200 of 200 reads each side. Before (every completion a task from the dispatcher's thread): 0. On emulated
        // CPUs (rxe under TCG, vCPUs in turn) the dispatcher often takes the CQ back while the loop runs the write's
        // task (91 of 200 client reads seen there): only the mechanism is asked for.
        assertTrue(served.byTheLoop.get() > atLeast(served.reads.get()),
                served.byTheLoop + " of " + served.reads + " server reads delivered by the loop itself");
        assertTrue(echoed.byTheLoop.get() > atLeast(echoed.reads.get()),
                echoed.byTheLoop + " of " + echoed.reads + " client reads delivered by the loop itself");
        client.close().sync();
        server.close().sync();
    }

    private static int atLeast(int reads) {
        return EmulatedCpus.inUse() ? 0 : reads / 2;
    }

    /**
     * Sixteen streams of 1 KiB writes from the client's registered memory, posted as they are (their writes complete in
     * send order, each removing its bytes from the outbound buffer), while a platform thread makes blocking calls on
     * the same endpoint — it polls the CQ itself while it waits and hands the channel's completions to the loop as
     * tasks. A completion the loop took itself must queue behind those: had it overtaken one, the buffer would post the
     * write again, and the server would read a message twice.
     */
    @Test
    void aStreamStaysInOrderWhileOtherThreadsDeliverSomeOfItsCompletions() throws Exception {
        int messages = EmulatedCpus.inUse() ? 1000 : 4000; // rxe under TCG: 4 MB take minutes
        int waitSeconds = EmulatedCpus.inUse() ? 600 : 60;
        int size = 1024;
        var position = new AtomicLong();
        var firstWrong = new CompletableFuture<Long>();
        Channel server = f.serverBootstrap(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                ByteBuf buf = (ByteBuf) msg;
                for (int i = buf.readerIndex(); i < buf.writerIndex(); i++) {
                    long p = position.getAndIncrement();
                    if (buf.getByte(i) != patternAt(p, size)) firstWrong.complete(p);
                }
                buf.release();
            }
        }).bind(ANY).sync().channel();
        Channel client = f.clientBootstrap(new ChannelInboundHandlerAdapter()).connect(server.localAddress()).sync()
                .channel();
        var stop = new AtomicBoolean();
        Thread blocking = Thread.ofPlatform().name("blocking-caller").start(() -> pingPong(f.client.endpoint, stop));
        var inline = new AtomicInteger();
        var queued = new AtomicInteger();
        var written = new Semaphore(0);
        client.eventLoop().execute(new Runnable() {
            private int next;
            private final ChannelFutureListener then = done -> {
                if (deliveredByTheLoop(client)) inline.incrementAndGet();
                else queued.incrementAndGet();
                written.release();
                if (done.isSuccess()) run();
            };

            @Override
            public void run() {
                if (next == 0) {
                    for (int i = 1; i < 16; i++) writeNext();
                }
                writeNext();
            }

            private void writeNext() {
                if (next == messages) return;
                ByteBuf message = client.alloc().directBuffer(size);
                for (int i = 0; i < size; i++) message.writeByte(patternAt((long) next * size + i, size));
                next++;
                client.writeAndFlush(message).addListener(then);
            }
        });
        assertTrue(written.tryAcquire(messages, waitSeconds, TimeUnit.SECONDS),
                written.availablePermits() + " writes done");
        stop.set(true);
        blocking.join();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(waitSeconds / 3);
        while (position.get() < (long) messages * size && !firstWrong.isDone() && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(null, firstWrong.getNow(null), "the stream's byte there was not the one written");
        assertEquals((long) messages * size, position.get(), "bytes read");
        assertTrue(inline.get() > 0 && queued.get() > 0,
                "both ways were taken: " + inline + " writes completed by the loop itself, " + queued + " by a task");
        client.close().sync();
        server.close().sync();
    }

    /** Byte {@code p} of the stream: a 1 KiB message sent twice or out of order breaks it. */
    private static byte patternAt(long p, int size) {
        return (byte) (p + p / size);
    }

    /** Blocking sends and receives over a session from {@code endpoint} to itself until {@code stop}. */
    private static void pingPong(RdmaEndpoint endpoint, AtomicBoolean stop) {
        try (RdmaListener listener = endpoint.listen(ANY)) {
            CompletableFuture<RdmaSession> accepted = listener.acceptAsync();
            try (RdmaSession a = endpoint.connectAsync(listener.address()).join();
                 RdmaSession b = accepted.join();
                 Block ping = endpoint.arena().allocate(8)) {
                while (!stop.get()) {
                    a.sendAsync(ping, 8).join(); // a platform thread's wait: it polls the CQ itself
                    try (InboundMessage m = b.receive(Duration.ofSeconds(10))) {
                        assertEquals(8, m.length());
                    }
                }
            }
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }

    @Test
    void aBlockingCallWhereTheLoopDeliversIsRefusedAndACloseThereEndsTheChannel() throws Exception {
        var refused = new CompletableFuture<Throwable>();
        Channel server = f.serverBootstrap(new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                ((ByteBuf) msg).release();
                if (refused.isDone() || !deliveredByTheLoop(ctx.channel())) return;
                try {
                    // not receive(): its receive is registered before the wait is refused, and would take a message
                    ((MooringChannel) ctx.channel()).session().endpoint().close();
                    refused.complete(null);
                } catch (Throwable t) {
                    refused.complete(t);
                }
                ctx.close();
            }
        }).bind(ANY).sync().channel();
        Channel client = f.clientBootstrap(new ChannelInboundHandlerAdapter()).connect(server.localAddress()).sync()
                .channel();
        for (int i = 0; i < 1000 && !refused.isDone() && client.isActive(); i++) {
            client.writeAndFlush(client.alloc().directBuffer(8).writeLong(i)).await(); // fails once the server closed
            Thread.sleep(2);
        }
        Throwable t = refused.get(10, TimeUnit.SECONDS);
        assertInstanceOf(WrongThreadException.class, t, String.valueOf(t));
        assertTrue(client.closeFuture().await(10, TimeUnit.SECONDS), "the server's close did not reach the client");
        server.close().sync();
    }

    @Test
    void anEndpointClosedUnderItsLoopsLeavesThemRunning() throws Exception {
        ProtectionDomain pd = RdmaDevices.open(TransportFixture.DEVICE, f.graph).allocateProtectionDomain();
        RdmaArena arena = RdmaArena.builder(pd).chunkSize(1 << 20).build();
        try {
            RdmaEndpoint endpoint = RdmaEndpoint.builder(pd, arena).build();
            EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, MooringIoHandler.newFactory(endpoint));
            for (int i = 0; i < 2; i++) group.next().submit(() -> { }).sync(); // both loops run, idle in the CQ
            Thread.sleep(20);
            assertTimeoutPreemptively(Duration.ofSeconds(10), endpoint::close);
            var fired = group.next().schedule(() -> true, 10, TimeUnit.MILLISECONDS);
            assertTrue(fired.await(10, TimeUnit.SECONDS), "a scheduled task did not run after the endpoint's close");
            assertTrue(group.shutdownGracefully(0, 5, TimeUnit.SECONDS).await(10, TimeUnit.SECONDS));
        } finally {
            arena.close();
        }
    }
}
