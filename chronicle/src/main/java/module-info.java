/** Chronicle Bytes views of the allocator's blocks, for engines that encode records with Chronicle. */
@SuppressWarnings({"requires-automatic", "requires-transitive-automatic"}) // Chronicle ships no module-info
module io.mooring.chronicle {
    requires transitive io.mooring.allocator;
    requires transitive chronicle.bytes;
    requires chronicle.core;

    exports io.mooring.chronicle;
}
