package io.mooring.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.testsuite.transport.TestsuitePermutation;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.TrafficShapingHandlerTest;
import java.util.List;

/**
 * Netty's {@link TrafficShapingHandlerTest} on the Mooring transport (see {@link MooringSuitePermutation}), with Netty's
 * allocators only. Its read-shaping tests send two 1 KiB writes in one flush and expect the server to read them as one
 * 2 KiB read, as a socket's {@code writev} delivers them, so that the shaper's next wait covers both (≥ 100 ms). Netty's
 * buffers are copied and gathered into one message, so they are; two {@link MooringByteBufAllocator} buffers are each
 * posted as they are (zero copy), two messages that may arrive apart: then the shaper suspends reading between them and
 * computes the next wait from the second alone (73-75 ms, and the test fails). The transport keeps the zero copy.
 */
class MooringTrafficShapingHandlerTest extends TrafficShapingHandlerTest {
    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return MooringSuitePermutation.socket();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return TestsuitePermutation.allocator();
    }
}
