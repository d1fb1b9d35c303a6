package io.mooring.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.testsuite.transport.socket.WriteBeforeRegisteredTest;
import java.util.List;

/** Netty's {@link WriteBeforeRegisteredTest} on the Mooring transport (see {@link MooringSuitePermutation}). */
class MooringWriteBeforeRegisteredTest extends WriteBeforeRegisteredTest {
    @Override
    protected List<BootstrapFactory<Bootstrap>> newFactories() {
        return MooringSuitePermutation.clientSocket();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return MooringSuitePermutation.allocators();
    }
}
