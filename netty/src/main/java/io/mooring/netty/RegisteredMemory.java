package io.mooring.netty;

import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * How the buffers reach their memory: by address, through one segment over all of it. A buffer's guard is Netty's —
 * its reference count, checked before each access — not a segment's scope: a buffer moves between threads freely
 * (an event loop allocates it, another thread releases it), which a confined scope forbids and a shared one makes
 * cost a handshake per release.
 */
final class RegisteredMemory {
    static final ValueLayout.OfShort SHORT_BE = JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    static final ValueLayout.OfShort SHORT_LE = JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt INT_BE = JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    static final ValueLayout.OfInt INT_LE = JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong LONG_BE = JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    static final ValueLayout.OfLong LONG_LE = JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private RegisteredMemory() {}

    /**
     * Fails with the flag to add if this JVM denies the module native access; called before {@link All} is first
     * touched, so the failure is this, not an {@link ExceptionInInitializerError} at the first buffer.
     */
    @SuppressWarnings("restricted") // a zero-length view of NULL: touches nothing, only asks the JVM for permission
    static void requireNativeAccess() {
        if (RegisteredMemory.class.getModule().isNativeAccessEnabled()) return;
        try {
            MemorySegment.NULL.reinterpret(0);
        } catch (IllegalCallerException denied) {
            throw new IllegalCallerException("Mooring's Netty buffers reach registered memory through FFM, and this JVM"
                    + " denies it native access: add --enable-native-access=io.mooring.netty (or ALL-UNNAMED on the"
                    + " class path)", denied);
        }
    }

    /** The segment over all memory, made once: every access is {@code All.MEMORY.get(layout, address + index)}. */
    static final class All {
        @SuppressWarnings("restricted") // the buffers check their indices and reference count before each access
        static final MemorySegment MEMORY = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

        private All() {}
    }
}
