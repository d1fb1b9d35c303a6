package io.mooring.benchmarks;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.mooring.allocator.Block;
import io.netty.buffer.ByteBuf;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * Buffers that outlive the operation that made them: a ring of {@code live} slots per thread, where each operation
 * frees the oldest buffer and puts a new one in its place — what a cache or a storage engine does with its blocks,
 * unlike allocate-and-free in one call, which lets the JIT keep a Java object in registers. The same ring serves
 * every allocator: Mooring blocks and Netty buffers as objects, C allocations as raw addresses (so the C peers keep
 * no Java object per buffer: their best case).
 */
final class LiveRing {
    private final Object[] objects;
    private final long[] addresses;
    private final int mask;
    private int next;
    private MethodHandle nativeFree; // the C allocator whose addresses are in the ring

    LiveRing(int live) {
        if (Integer.bitCount(live) != 1) throw new IllegalArgumentException("live must be a power of two, was " + live);
        objects = new Object[live];
        addresses = new long[live];
        mask = live - 1;
    }

    /** The oldest Mooring block, closed, replaced by one of {@code size} bytes whose first 8 are written. */
    void mooring(io.mooring.allocator.RdmaArena arena, int size) {
        int i = next++ & mask;
        Block old = (Block) objects[i];
        if (old != null) old.close();
        Block b = arena.allocate(size);
        b.segment().set(JAVA_LONG, 0, size);
        objects[i] = b;
    }

    /** The same with a Netty buffer. */
    void netty(io.netty.buffer.ByteBufAllocator allocator, int size) {
        int i = next++ & mask;
        ByteBuf old = (ByteBuf) objects[i];
        if (old != null) old.release();
        ByteBuf buf = allocator.directBuffer(size);
        buf.setLongLE(0, size);
        objects[i] = buf;
    }

    /**
     * The floor of a checked block that outlives its call: no allocator, only what the JDK makes per checked buffer —
     * a confined scope ({@code Arena.ofConfined()}) and a segment over slot {@code i}'s bytes of {@code memory}
     * reinterpreted into it, written, and the oldest scope closed.
     */
    @SuppressWarnings("restricted") // a slice of memory the benchmark allocated
    void confinedScope(MemorySegment memory, int size) {
        int i = next++ & mask;
        if (objects[i] instanceof Arena old) old.close();
        Arena scope = Arena.ofConfined();
        MemorySegment.ofAddress(memory.address() + (long) i * size).reinterpret(size, scope, null)
                .set(JAVA_LONG, 0, size);
        objects[i] = scope;
    }

    /** The number of slots. */
    int live() {
        return objects.length;
    }

    /** The same with a C allocator's {@code malloc}/{@code free} downcalls. */
    @SuppressWarnings("restricted") // a segment over the bytes malloc just returned
    void malloc(MethodHandle malloc, MethodHandle free, int size) throws Throwable {
        nativeFree = free;
        int i = next++ & mask;
        long old = addresses[i];
        if (old != 0) free.invokeExact(MemorySegment.ofAddress(old));
        MemorySegment memory = ((MemorySegment) malloc.invokeExact((long) size)).reinterpret(size);
        if (memory.address() == 0) throw new OutOfMemoryError("malloc(" + size + ")");
        memory.set(JAVA_LONG, 0, size);
        addresses[i] = memory.address();
    }

    /** Frees whatever the ring still holds (a trial's end). */
    void freeAll() throws Throwable {
        for (int i = 0; i < objects.length; i++) {
            if (objects[i] instanceof Block b) b.close();
            else if (objects[i] instanceof ByteBuf buf) buf.release();
            else if (objects[i] instanceof Arena scope) scope.close();
            objects[i] = null;
            if (addresses[i] != 0) nativeFree.invokeExact(MemorySegment.ofAddress(addresses[i]));
            addresses[i] = 0;
        }
    }
}
