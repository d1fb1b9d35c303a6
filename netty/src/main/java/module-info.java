/**
 * Netty on registered memory ({@code io.mooring.netty}): {@link io.mooring.netty.MooringByteBufAllocator}, a Netty
 * {@code ByteBufAllocator} whose direct buffers are slices of an {@link io.mooring.allocator.RdmaArena},
 * {@link io.mooring.netty.MooringBuffers}, which gives a buffer's keys, and a Netty transport over the sessions of an
 * {@link io.mooring.lease.RdmaEndpoint} ({@link io.mooring.netty.MooringIoHandler},
 * {@link io.mooring.netty.MooringChannel}, {@link io.mooring.netty.MooringServerChannel}). The buffers reach their memory through FFM, so
 * an application grants this module native access too ({@code --enable-native-access=io.mooring.netty}).
 */
module io.mooring.netty {
    requires transitive io.mooring.allocator;
    requires transitive io.mooring.lease;
    requires transitive io.netty.transport;
    requires transitive io.netty.buffer;
    requires transitive io.netty.common;

    exports io.mooring.netty;
}
