/** Applications on Mooring's public API: the user guide's examples. */
module io.mooring.examples {
    requires io.mooring.lease;
    requires io.mooring.netty;
    requires io.netty.transport;
    exports io.mooring.examples.kv; // the KV cache, which `mooring kv` runs
    exports io.mooring.examples.pagestore; // the page store, which `mooring pagestore` runs
}
