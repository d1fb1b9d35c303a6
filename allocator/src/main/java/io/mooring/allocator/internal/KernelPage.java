package io.mooring.allocator.internal;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * The kernel's base page: what {@code mmap} aligns to and the unit {@code ibv_reg_mr} pins. Its one home (libc's
 * {@code getpagesize}, bound once), used by the arena's mappings and the registration cache's keys; not exported.
 */
public final class KernelPage {
    /** The kernel's page size in bytes, e.g. 4096 on x86_64. */
    public static final long SIZE = pageSize();

    private KernelPage() {}

    @SuppressWarnings("restricted") // libc's getpagesize, bound with its documented signature
    private static long pageSize() {
        Linker linker = Linker.nativeLinker();
        MethodHandle getpagesize = linker.downcallHandle(linker.defaultLookup().find("getpagesize").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT));
        try {
            return (int) getpagesize.invokeExact();
        } catch (Throwable t) {
            throw new AssertionError("getpagesize cannot fail", t);
        }
    }
}
