package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.netty.util.internal.PlatformDependent;
import org.junit.jupiter.api.Test;

/**
 * The module's tests run twice (netty/pom.xml): once as an application gets Netty on JDK 25 by default, without
 * {@code sun.misc.Unsafe}, and once with it, where Netty reaches buffers by their memory address. This checks that
 * each run really is in its mode.
 */
class NettyModeTest {
    @Test
    void nettyUsesUnsafeExactlyInTheRunThatAllowsIt() {
        assertEquals(Boolean.getBoolean("mooring.test.nettyUnsafe"), PlatformDependent.hasUnsafe());
    }
}
