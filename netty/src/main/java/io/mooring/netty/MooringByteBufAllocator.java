package io.mooring.netty;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import java.util.Objects;

/**
 * A Netty {@link ByteBufAllocator} whose direct buffers are slices of registered memory: each holds a {@link Block} of
 * an {@link RdmaArena}, so a NIC can read and write it as it is ({@link MooringBuffers} gives its keys). Select it in
 * any Netty application, on any transport:
 * <pre>{@code
 * var allocator = new MooringByteBufAllocator(arena);
 * new ServerBootstrap().childOption(ChannelOption.ALLOCATOR, allocator) ...
 * }</pre>
 *
 * <p>A buffer's reference count is its block's lifetime: the release that brings it to 0 closes the block, which goes
 * back to the arena — from any thread (a release on another thread than the allocating one is the arena's mt free, one
 * CAS). Slices, duplicates and retained slices share their buffer's count, hence its block; a buffer still referenced
 * keeps its block. Growing past the block ({@code capacity(n)}, {@code ensureWritable}) moves the bytes to a larger
 * block and gives the old one back. Netty's leak detector tracks the buffers as it tracks its own
 * ({@code -Dio.netty.leakDetection.level}): a buffer dropped unreleased is reported with where it was allocated.
 *
 * <p>Every buffer is a new object — the arena's thread caches make the memory cheap, not a recycled buffer. Netty's
 * pooled and adaptive allocators recycle theirs, so a reference kept past {@code release()} may read or write the next
 * owner's bytes; here such a reference only throws {@link io.netty.util.IllegalReferenceCountException}.
 *
 * <p>Heap buffers are not registered (a NIC cannot reach the Java heap): they come from the heap allocator given, by
 * default {@link ByteBufAllocator#DEFAULT}. Thread-safe.
 */
public final class MooringByteBufAllocator extends AbstractByteBufAllocator {
    private final RdmaArena arena;
    private final ByteBufAllocator heap;

    /** Direct buffers from {@code arena}, heap buffers from {@link ByteBufAllocator#DEFAULT}. */
    public MooringByteBufAllocator(RdmaArena arena) {
        this(arena, ByteBufAllocator.DEFAULT);
    }

    /**
     * Direct buffers from {@code arena}, heap buffers from {@code heap}.
     *
     * @throws IllegalCallerException naming the flag to add, if this JVM denies this module native access
     */
    public MooringByteBufAllocator(RdmaArena arena, ByteBufAllocator heap) {
        super(true);
        this.arena = Objects.requireNonNull(arena, "arena");
        this.heap = Objects.requireNonNull(heap, "heap");
        RegisteredMemory.requireNativeAccess();
    }

    /** The arena the direct buffers' blocks come from. */
    public RdmaArena arena() {
        return arena;
    }

    @Override
    protected ByteBuf newDirectBuffer(int initialCapacity, int maxCapacity) {
        return toLeakAwareBuffer(new RegisteredByteBuf(this, initialCapacity, maxCapacity));
    }

    @Override
    protected ByteBuf newHeapBuffer(int initialCapacity, int maxCapacity) {
        return heap.heapBuffer(initialCapacity, maxCapacity);
    }

    /** True: direct buffers come from the arena's pooled blocks. */
    @Override
    public boolean isDirectBufferPooled() {
        return true;
    }

    /** A block for a buffer of {@code capacity} bytes; one byte at least, so that even an empty buffer has keys. */
    Block allocateBlock(int capacity) {
        return arena.allocate(Math.max(1, capacity));
    }

    @Override
    public String toString() {
        return "MooringByteBufAllocator[" + arena.name() + "]";
    }
}
