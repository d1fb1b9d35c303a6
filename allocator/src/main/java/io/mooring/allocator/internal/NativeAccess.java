package io.mooring.allocator.internal;

import io.mooring.verbs.VerbsException;
import java.lang.foreign.MemorySegment;

/**
 * Whether this module may call native code ({@code mmap}, {@code getpagesize}, widening segments to pages). Checked
 * when an arena or a registration cache is built, so that a JVM started with {@code --illegal-native-access=deny}
 * and without {@code --enable-native-access} for Mooring fails there with the flag to add, instead of with an
 * {@link ExceptionInInitializerError} at the first allocation.
 */
public final class NativeAccess {
    private NativeAccess() {}

    /**
     * @param needs what the caller does through FFM, for the message: "the allocator calls the kernel through FFM"
     * @throws IllegalCallerException naming the flags to add, if this JVM denies the module native access
     */
    @SuppressWarnings("restricted") // a zero-length view of NULL: touches nothing, only asks the JVM for permission
    public static void require(String needs) {
        if (NativeAccess.class.getModule().isNativeAccessEnabled()) return;
        try {
            MemorySegment.NULL.reinterpret(0);
        } catch (IllegalCallerException denied) {
            throw new IllegalCallerException(needs + ", and this JVM denies it native access: "
                    + VerbsException.NATIVE_ACCESS_HINT, denied);
        }
    }
}
