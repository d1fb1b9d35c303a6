package io.mooring.examples.guide;

import io.mooring.allocator.RdmaArena;
import io.mooring.netty.MooringBuffers;
import io.mooring.netty.MooringByteBufAllocator;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** The guide's Netty example: an echo server and client on Netty's NIO transport, every buffer in registered memory. */
public final class NettyEchoExample {
    private static final String MESSAGE = "hello from registered memory";

    public static void main(String[] args) throws Exception {
        try (DeviceContext device = RdmaDevices.open("soft:soft0");
             ProtectionDomain pd = device.allocateProtectionDomain();
             RdmaArena arena = RdmaArena.builder(pd).build()) {
            var allocator = new MooringByteBufAllocator(arena);
            EventLoopGroup group = new MultiThreadIoEventLoopGroup(NioIoHandler.newFactory());
            try {
                Channel server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                        .childOption(ChannelOption.ALLOCATOR, allocator) // the one line that moves Netty's buffers
                        .childHandler(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                ctx.writeAndFlush(msg); // the echo: the registered buffer read goes back out
                            }
                        })
                        .bind("127.0.0.1", 0).sync().channel();
                var echoed = new CompletableFuture<String>();
                Channel client = new Bootstrap().group(group).channel(NioSocketChannel.class)
                        .option(ChannelOption.ALLOCATOR, allocator)
                        .handler(new ChannelInboundHandlerAdapter() {
                            private final StringBuilder text = new StringBuilder();

                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                ByteBuf buf = (ByteBuf) msg;
                                text.append(buf.toString(StandardCharsets.UTF_8));
                                if (!MooringBuffers.isRegistered(buf)) echoed.completeExceptionally(
                                        new AssertionError("a buffer from another allocator: " + buf));
                                buf.release(); // back to the arena
                                if (text.length() == MESSAGE.length()) echoed.complete(text.toString());
                            }
                        })
                        .connect(server.localAddress()).sync().channel();
                ByteBuf hello = client.alloc().directBuffer().writeBytes(MESSAGE.getBytes(StandardCharsets.UTF_8));
                System.out.println("registered: " + MooringBuffers.isRegistered(hello)); // lkey(hello) names it to a NIC
                client.writeAndFlush(hello);
                System.out.println("echoed: " + echoed.get(30, TimeUnit.SECONDS));
                client.close().sync();
                server.close().sync();
            } finally {
                group.shutdownGracefully(0, 5, TimeUnit.SECONDS).sync();
            }
        }
    }

    private NettyEchoExample() {}
}
