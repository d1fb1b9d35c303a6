package io.mooring.regcache;

import io.mooring.allocator.internal.KernelPage;
import java.lang.foreign.MemorySegment;

/**
 * Whole kernel pages ({@link KernelPage}), the unit {@code ibv_reg_mr} pins: the cache keys regions by whole pages, so every byte
 * range inside the same pages finds the same region (exact-byte keys gave libfabric a 0% hit rate, #12836).
 */
final class Pages {
    private static final long SIZE = KernelPage.SIZE;

    private Pages() {}

    /** The first page of {@code segment}: refuses what can never be registered, on a hit as on a miss. */
    static long start(MemorySegment segment) {
        if (!segment.isNative()) {
            throw new IllegalArgumentException("cannot register a heap segment (" + segment.byteSize() + " bytes): the"
                    + " garbage collector moves heap memory; use native memory (an Arena, a mapped file, an RdmaArena)");
        }
        if (segment.byteSize() == 0) throw new IllegalArgumentException("cannot register an empty segment");
        return segment.address() & -SIZE;
    }

    /** The end of the last page of {@code segment}. */
    static long end(MemorySegment segment) {
        return (segment.address() + segment.byteSize() + SIZE - 1) & -SIZE;
    }

    /** A segment over the pages {@code [from, to)}: the caller's memory, widened to what the kernel pins. */
    @SuppressWarnings("restricted") // the caller handed us memory inside these pages; the kernel pins all of them
    static MemorySegment span(long from, long to) {
        return MemorySegment.ofAddress(from).reinterpret(to - from);
    }
}
