package io.mooring.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketSslGreetingTest;
import java.util.List;

/** Netty's {@link SocketSslGreetingTest} on the Mooring transport (see {@link MooringSuitePermutation}). */
class MooringSocketSslGreetingTest extends SocketSslGreetingTest {
    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return MooringSuitePermutation.socket();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return MooringSuitePermutation.allocators();
    }
}
