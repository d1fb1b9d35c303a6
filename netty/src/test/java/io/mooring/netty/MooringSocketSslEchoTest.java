package io.mooring.netty;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBufAllocator;
import io.netty.testsuite.transport.TestsuitePermutation.BootstrapComboFactory;
import io.netty.testsuite.transport.socket.SocketSslEchoTest;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * Netty's {@link SocketSslEchoTest} on the Mooring transport (see {@link MooringSuitePermutation}), over every
 * {@value #STRIDE}th of its permutations in Netty's order: all of them (each run with three allocators) outlast the
 * build's fork timeout here. An odd prime stride samples across its dimensions (engines, renegotiation, delegated
 * tasks, auto-read, chunked writes, composite buffers), not every combination; the same subset every run.
 */
class MooringSocketSslEchoTest extends SocketSslEchoTest {
    private static final int STRIDE = 7;

    /** What JUnit's {@code @MethodSource("data")} finds first: it hides Netty's, whose permutations it picks from. */
    public static Collection<Object[]> data() throws Exception {
        List<Object[]> all = new ArrayList<>(SocketSslEchoTest.data());
        List<Object[]> subset = new ArrayList<>();
        for (int i = 0; i < all.size(); i += STRIDE) subset.add(all.get(i));
        return subset;
    }

    @Override
    protected List<BootstrapComboFactory<ServerBootstrap, Bootstrap>> newFactories() {
        return MooringSuitePermutation.socket();
    }

    @Override
    protected List<ByteBufAllocator> newAllocators() {
        return MooringSuitePermutation.allocators();
    }
}
