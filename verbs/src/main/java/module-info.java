/**
 * The RDMA verbs object model (device, context, PD, MR, MW, CQ, QP) over two providers: {@code soft}, pure Java,
 * and {@code ibv}, rdma-core's libibverbs through FFM. Only {@code io.mooring.verbs} is API: the provider SPI and
 * both providers stay inside this module. The {@code ibv} provider calls native code, so an application grants
 * this module native access ({@code --enable-native-access=io.mooring.verbs}).
 */
module io.mooring.verbs {
    requires transitive io.mooring.lifecycle;

    exports io.mooring.verbs;

    uses io.mooring.verbs.spi.VerbsProvider;
    provides io.mooring.verbs.spi.VerbsProvider with io.mooring.verbs.soft.SoftProvider,
            io.mooring.verbs.ibv.IbvProvider;
}
