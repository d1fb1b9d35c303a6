/** Applications on Mooring's public API: the user guide's examples. */
@SuppressWarnings("requires-automatic") // gRPC-java's jars name their modules in their manifests only
module io.mooring.examples {
    requires io.mooring.lease;
    requires io.mooring.netty;
    requires transitive io.netty.transport; // NettyEcho's API names its types
    requires io.grpc; // gRPC-java over the Mooring transport (io.mooring.examples.netty)
    requires io.grpc.netty;
    requires io.grpc.stub;
    exports io.mooring.examples.kv; // the KV cache, which `mooring kv` runs
    exports io.mooring.examples.netty; // the Netty echo, which `mooring netty-echo` runs
    exports io.mooring.examples.pagestore; // the page store, which `mooring pagestore` runs
}
