package io.mooring.allocator;

import io.mooring.allocator.internal.KernelPage;
import io.mooring.verbs.Errno;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * Chunk memory straight from the kernel ({@code mmap}/{@code munmap}/{@code madvise} through FFM), so chunks
 * are page-aligned, can be aligned to their own size, can use huge pages, and are returned to the system when
 * purged — which an {@link Arena} cannot do for part of its memory. Linux x86_64 values; {@code
 * NativeMemoryConstantsTest} checks them against {@code <sys/mman.h>}.
 */
final class NativeMemory {
    static final int PROT_READ = 0x1;
    static final int PROT_WRITE = 0x2;
    static final int MAP_PRIVATE = 0x02;
    static final int MAP_ANONYMOUS = 0x20;
    static final int MAP_NORESERVE = 0x4000;
    static final int MAP_HUGETLB = 0x40000;
    static final int MADV_HUGEPAGE = 14;
    static final long MAP_FAILED = -1;

    private static final Linker LINKER = Linker.nativeLinker();
    private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO =
            CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final MethodHandle MMAP = downcall("mmap", FunctionDescriptor.of(ValueLayout.JAVA_LONG,
            ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT,
            ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG), CAPTURE_ERRNO);
    private static final MethodHandle MUNMAP = downcall("munmap", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG), CAPTURE_ERRNO);
    private static final MethodHandle MADVISE = downcall("madvise", FunctionDescriptor.of(ValueLayout.JAVA_INT,
            ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_INT), CAPTURE_ERRNO);

    private NativeMemory() {}

    @SuppressWarnings("restricted") // libc's own functions, bound with their documented signatures
    private static MethodHandle downcall(String name, FunctionDescriptor descriptor, Linker.Option... options) {
        MemorySegment symbol = LINKER.defaultLookup().find(name)
                .orElseThrow(() -> new UnsatisfiedLinkError("libc has no " + name));
        return LINKER.downcallHandle(symbol, descriptor, options);
    }

    /**
     * Maps {@code size} bytes of zeroed memory whose address is a multiple of {@code alignment} (a power of two):
     * above the kernel's page size (4 KiB here, less than the allocator's 8 KiB page) it maps
     * {@code size + alignment} and unmaps the unaligned ends.
     *
     * @throws OutOfMemoryError naming the errno when the kernel refuses
     */
    static long map(long size, long alignment, boolean hugePages) {
        long span = size + (alignment > KernelPage.SIZE ? alignment : 0); // mmap aligns to a page anyway
        int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (hugePages ? MAP_HUGETLB : 0);
        long base;
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            base = (long) MMAP.invokeExact(state, 0L, span, PROT_READ | PROT_WRITE, flags, -1, 0L);
            if (base == MAP_FAILED) {
                int errno = (int) ERRNO.get(state, 0L);
                String hint = hugePages && errno == Errno.ENOMEM.number()
                        ? ": no huge pages reserved (vm.nr_hugepages), or turn hugePages off" : "";
                throw new OutOfMemoryError("mmap of " + span + " bytes failed with " + Errno.describe(errno) + hint);
            }
        } catch (Throwable t) {
            throw unchecked(t);
        }
        long aligned = (base + alignment - 1) & -alignment;
        if (aligned > base) unmap(base, aligned - base);
        long end = aligned + size;
        if (base + span > end) unmap(end, base + span - end);
        return aligned;
    }

    /** Asks for transparent huge pages on a mapping (a hint: refused quietly where THP is off). */
    static void adviseHugePages(long address, long size) {
        try (Arena a = Arena.ofConfined()) {
            int unused = (int) MADVISE.invokeExact(a.allocate(CALL_STATE), address, size, MADV_HUGEPAGE); // a hint
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    static void unmap(long address, long size) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment state = a.allocate(CALL_STATE);
            int rc = (int) MUNMAP.invokeExact(state, address, size);
            if (rc != 0) {
                throw new IllegalStateException("munmap(0x" + Long.toHexString(address) + ", " + size + ") failed with "
                        + Errno.describe((int) ERRNO.get(state, 0L)));
            }
        } catch (Throwable t) {
            throw unchecked(t);
        }
    }

    /** A segment over mapped memory: confined or shared to {@code scope}, or global ({@code scope} null). */
    @SuppressWarnings("restricted") // the allocator owns this memory: it mapped it, or the caller registered it
    static MemorySegment segment(long address, long size, Arena scope) {
        MemorySegment raw = MemorySegment.ofAddress(address);
        return scope == null ? raw.reinterpret(size) : raw.reinterpret(size, scope, null);
    }

    /** A downcall's throwable as it is: downcalls throw no checked exception. */
    private static RuntimeException unchecked(Throwable t) {
        if (t instanceof RuntimeException e) return e;
        if (t instanceof Error e) throw e;
        throw new AssertionError("unexpected checked exception from a downcall", t);
    }
}
