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
 * <p>A buffer may be released on any thread; the {@link ReleasePattern} says which case to make cheap (by default
 * {@link ReleasePattern#SAME_THREAD}). Heap buffers are not registered (a NIC cannot reach the Java heap): they come
 * from the heap allocator given, by default {@link ByteBufAllocator#DEFAULT}. Thread-safe.
 */
public final class MooringByteBufAllocator extends AbstractByteBufAllocator {
    private final RdmaArena arena;
    private final ByteBufAllocator heap;
    private final boolean handOff;

    /** Direct buffers from {@code arena}, heap buffers from {@link ByteBufAllocator#DEFAULT}, for same-thread releases. */
    public MooringByteBufAllocator(RdmaArena arena) {
        this(arena, ByteBufAllocator.DEFAULT, ReleasePattern.SAME_THREAD);
    }

    /**
     * Direct buffers from {@code arena}, heap buffers from {@code heap}, cheap to release as {@code releases} says.
     *
     * @throws IllegalCallerException naming the flag to add, if this JVM denies this module native access
     */
    public MooringByteBufAllocator(RdmaArena arena, ByteBufAllocator heap, ReleasePattern releases) {
        super(true);
        this.arena = Objects.requireNonNull(arena, "arena");
        this.heap = Objects.requireNonNull(heap, "heap");
        this.handOff = Objects.requireNonNull(releases, "releases") == ReleasePattern.OTHER_THREADS;
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

    /** A buffer owning {@code received}, a block a peer's message was written into, holding its {@code length} bytes. */
    ByteBuf wrap(Block received, int length) {
        return toLeakAwareBuffer(new RegisteredByteBuf(this, received, length));
    }

    /** A block for a buffer of {@code capacity} bytes; one byte at least, so that even an empty buffer has keys. */
    Block allocateBlock(int capacity) {
        Block b = arena.allocate(Math.max(1, capacity));
        if (handOff) b.handOff(); // the buffers use no segment: the hand-off only makes every close free at once
        return b;
    }

    @Override
    public String toString() {
        return "MooringByteBufAllocator[" + arena.name() + (handOff ? ", " + ReleasePattern.OTHER_THREADS : "") + "]";
    }
}
