package io.mooring.netty;

import io.mooring.allocator.Block;
import io.mooring.verbs.MemoryRegion;
import io.netty.buffer.ByteBuf;

/**
 * The registration of a buffer of {@link MooringByteBufAllocator}: what a work request names it by. Takes the buffer
 * itself or any view of it (a slice, a duplicate, a read-only or leak-tracking wrapper) and finds the block under it.
 * <pre>{@code
 * ByteBuf buf = allocator.directBuffer(4096).writeBytes(payload);
 * qp.post(WorkRequest.send(MooringBuffers.region(buf), MooringBuffers.regionOffset(buf, buf.readerIndex()),
 *         buf.readableBytes()));
 * }</pre>
 * The block itself is not handed out: the buffer's reference count is its lifetime, which a second owner closing it
 * would break. Each method fails with {@link IllegalArgumentException} for a buffer that is not a Mooring buffer
 * (a heap, composite or other allocator's buffer: copy it into one first) and with Netty's
 * {@link io.netty.util.IllegalReferenceCountException} for a released one.
 */
public final class MooringBuffers {
    private MooringBuffers() {}

    /** Whether {@code buf} is a buffer of a {@link MooringByteBufAllocator} or a view of one. */
    public static boolean isRegistered(ByteBuf buf) {
        return find(buf) != null;
    }

    /** The registered region the buffer's memory lies in. */
    public static MemoryRegion region(ByteBuf buf) {
        return blockOf(buf).region();
    }

    /** The key local work requests name the buffer's memory by. */
    public static int lkey(ByteBuf buf) {
        return blockOf(buf).lkey();
    }

    /**
     * The key a peer could reach the buffer's whole region with.
     *
     * @throws IllegalStateException if the arena grants no remote access
     */
    public static int rkey(ByteBuf buf) {
        return blockOf(buf).rkey();
    }

    /**
     * Where byte {@code index} of {@code buf} (in the buffer's own indices, as {@code getByte} takes them) lies in its
     * {@link #region}.
     *
     * @throws IndexOutOfBoundsException if {@code index} is outside {@code [0, capacity]}
     */
    public static long regionOffset(ByteBuf buf, int index) {
        MemoryRegion region = region(buf);
        if (index < 0 || index > buf.capacity()) {
            throw new IndexOutOfBoundsException("index " + index + " is outside the buffer's [0, " + buf.capacity() + "]");
        }
        return buf.memoryAddress() + index - region.address();
    }

    /** The block under {@code buf}. */
    static Block blockOf(ByteBuf buf) {
        RegisteredByteBuf root = find(buf);
        if (root == null) {
            throw new IllegalArgumentException(buf + " is not a buffer of a MooringByteBufAllocator (a heap, composite"
                    + " or other allocator's buffer has no registration): copy it into one first");
        }
        return root.block();
    }

    /** The Mooring buffer {@code buf} is or was derived from, or null. */
    static RegisteredByteBuf find(ByteBuf buf) {
        for (ByteBuf b = buf; b != null; b = b.unwrap()) {
            if (b instanceof RegisteredByteBuf registered) return registered;
        }
        return null;
    }
}
