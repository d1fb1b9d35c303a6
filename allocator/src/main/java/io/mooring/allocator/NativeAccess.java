package io.mooring.allocator;

import io.mooring.verbs.VerbsException;
import java.lang.foreign.MemorySegment;

/**
 * Whether this module may call native code ({@code mmap} for its chunks). Checked when an arena or a registration
 * cache is built, so that a JVM started with {@code --illegal-native-access=deny} and without
 * {@code --enable-native-access} for Mooring fails there with the flag to add, instead of with an
 * {@link ExceptionInInitializerError} at the first allocation.
 */
final class NativeAccess {
    private NativeAccess() {}

    @SuppressWarnings("restricted") // a zero-length view of NULL: touches nothing, only asks the JVM for permission
    static void require() {
        if (NativeAccess.class.getModule().isNativeAccessEnabled()) return;
        try {
            MemorySegment.NULL.reinterpret(0);
        } catch (IllegalCallerException denied) {
            throw new IllegalCallerException("the allocator calls the kernel through FFM (mmap, getpagesize), and this"
                    + " JVM denies it native access: " + VerbsException.NATIVE_ACCESS_HINT, denied);
        }
    }
}
