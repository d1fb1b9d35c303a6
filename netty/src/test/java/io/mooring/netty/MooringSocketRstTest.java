package io.mooring.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketRstTest;
import java.util.List;

/** Netty's {@link SocketRstTest} on the Mooring transport (see {@link MooringSuitePermutation}). */
class MooringSocketRstTest extends SocketRstTest {
    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return MooringSuitePermutation.socket();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return MooringSuitePermutation.allocators();
    }
}
