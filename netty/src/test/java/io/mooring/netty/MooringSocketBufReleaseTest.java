package io.mooring.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.testsuite.transport.TestsuitePermutation;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketBufReleaseTest;
import java.util.List;

/**
 * Netty's {@link SocketBufReleaseTest} on the Mooring transport (see {@link MooringSuitePermutation}), with Netty's
 * allocators only. It closes both channels right after their first writes and then expects each written buffer back to
 * the one reference its handler kept. A {@link MooringByteBufAllocator} buffer is posted as it is (zero copy): its
 * write succeeds when its send completes, but a close while the NIC still reads it fails the write at once, and the
 * transport's reference goes only when the send completes — the memory must not be reused under the NIC. What the
 * test checks for such a buffer, a write that succeeded, is {@code MooringTransportTest}'s
 * {@code aBufferRefilledAfterItsWriteSucceededSendsEveryFill}. A copied buffer is released at the hand-off.
 */
class MooringSocketBufReleaseTest extends SocketBufReleaseTest {
    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return MooringSuitePermutation.socket();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return TestsuitePermutation.allocator();
    }
}
