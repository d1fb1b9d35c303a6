package io.mooring.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketAutoReadTest;
import java.util.List;

/** Netty's {@link SocketAutoReadTest} on the Mooring transport (see {@link MooringSuitePermutation}). */
class MooringSocketAutoReadTest extends SocketAutoReadTest {
    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return MooringSuitePermutation.socket();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return MooringSuitePermutation.allocators();
    }
}
