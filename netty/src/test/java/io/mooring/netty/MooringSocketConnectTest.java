package io.mooring.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketConnectTest;
import java.util.List;

/**
 * Netty's {@link SocketConnectTest} on the Mooring transport. Its {@code TCP_FASTOPEN} tests run without the option,
 * as Netty's own transports without fast open run them ({@link #enableTcpFastOpen}): data written before the connect
 * goes out once it is made, which is what they check. {@code testLocalAddressAfterConnect} runs as it is: a connected
 * channel's local address is its end of the session's bootstrap connection.
 */
class MooringSocketConnectTest extends SocketConnectTest {
    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return MooringSuitePermutation.socket();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return MooringSuitePermutation.allocators();
    }

    /** A session has no fast open: the tests run as on a transport without it (TFO changes nothing they observe). */
    @Override
    protected void enableTcpFastOpen(ServerBootstrap sb, Bootstrap cb) {
    }
}
