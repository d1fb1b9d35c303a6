package io.mooring.verbs.ibv;

import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The native memory one verbs object owns for its whole life (work-request templates, SGE and work-completion
 * arrays, attribute structs), freed at once when the object is destroyed. Every byte is counted in
 * {@link #liveBytes()}, so a test can assert that a run leaked nothing the provider allocated.
 */
final class NativeBlock {
    private static final AtomicLong LIVE_BYTES = new AtomicLong();
    private static final AtomicLong LIVE_BLOCKS = new AtomicLong();

    private final Arena arena = Arena.ofShared(); // posts may come from any thread
    private long bytes;
    private boolean freed;

    NativeBlock() {
        LIVE_BLOCKS.incrementAndGet();
    }

    /** Zeroed memory for {@code layout}. */
    synchronized MemorySegment allocate(MemoryLayout layout) {
        return allocate(layout.byteSize(), layout.byteAlignment());
    }

    /** Zeroed memory for {@code count} elements of {@code layout}. */
    synchronized MemorySegment allocate(MemoryLayout layout, long count) {
        return allocate(layout.byteSize() * count, layout.byteAlignment());
    }

    synchronized MemorySegment allocate(long size, long alignment) {
        MemorySegment s = arena.allocate(size, alignment);
        bytes += size;
        LIVE_BYTES.addAndGet(size);
        return s;
    }

    /** Frees everything; idempotent. Nothing may touch the segments afterwards (the arena enforces it). */
    synchronized void free() {
        if (freed) return;
        freed = true;
        arena.close();
        LIVE_BYTES.addAndGet(-bytes);
        LIVE_BLOCKS.decrementAndGet();
    }

    /** Bytes the provider holds in native blocks right now. */
    static long liveBytes() {
        return LIVE_BYTES.get();
    }

    /** Native blocks not yet freed. */
    static long liveBlocks() {
        return LIVE_BLOCKS.get();
    }
}
