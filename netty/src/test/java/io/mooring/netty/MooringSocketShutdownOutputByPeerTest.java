package io.mooring.netty;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapFactory;
import io.netty.testsuite.transport.socket.AbstractSocketShutdownOutputByPeerTest;
import io.netty.testsuite.transport.socket.SocketShutdownOutputByPeerTest;
import java.io.IOException;
import java.net.SocketAddress;
import java.util.List;

/**
 * Netty's {@link SocketShutdownOutputByPeerTest} on the Mooring transport: its base class with the peer a bare
 * {@link RawSessionPeer} where Netty's subclass has a {@code java.net.Socket} — a Mooring server channel takes sessions,
 * not TCP connections — shutting its output down by the transport's end-of-stream message.
 */
class MooringSocketShutdownOutputByPeerTest extends AbstractSocketShutdownOutputByPeerTest<RawSessionPeer> {
    @Override
    protected List<BootstrapFactory<ServerBootstrap>> newFactories() {
        return MooringSuitePermutation.serverSocket();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return MooringSuitePermutation.allocators();
    }

    @Override
    protected RawSessionPeer newSocket() {
        return MooringSuitePermutation.clientSidePeer();
    }

    @Override
    protected void connect(RawSessionPeer peer, SocketAddress address) throws IOException {
        peer.connect(address);
    }

    @Override
    protected void write(RawSessionPeer peer, int data) {
        peer.write(data);
    }

    @Override
    protected void shutdownOutput(RawSessionPeer peer) {
        peer.shutdownOutput();
    }

    @Override
    protected void close(RawSessionPeer peer) {
        peer.close();
    }
}
