/**
 * The RDMA verbs object model (device, context, PD, MR, MW, CQ, QP) over two providers: {@code soft}, pure Java,
 * and {@code ibv}, rdma-core's libibverbs through FFM. {@code io.mooring.verbs} (the objects and requests) and
 * {@code io.mooring.verbs.values} (what they and the providers speak) are the API; {@code io.mooring.verbs.testing}
 * is fault injection for tests; the provider SPI and both providers stay inside this module. The {@code ibv}
 * provider calls native code, so an application grants this module native access
 * ({@code --enable-native-access=io.mooring.verbs}).
 */
module io.mooring.verbs {
    requires transitive io.mooring.lifecycle;

    exports io.mooring.verbs;
    // The values both the API and the provider SPI speak (rights, opcodes, states, attributes): API too.
    exports io.mooring.verbs.values;
    // Fault injection for tests (soft provider only): the test suites of chaos and remote-lease drive it.
    exports io.mooring.verbs.testing;

    uses io.mooring.verbs.spi.VerbsProvider;
    provides io.mooring.verbs.spi.VerbsProvider with io.mooring.verbs.soft.SoftProvider,
            io.mooring.verbs.ibv.IbvProvider;
}
