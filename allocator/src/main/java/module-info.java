/**
 * The registered slab arena: blocks are {@code MemorySegment} slices of a few large registered memory regions, and
 * the registration cache registers memory the caller brings. Chunks are mapped with {@code mmap} through FFM, so an
 * application grants this module native access ({@code --enable-native-access=io.mooring.allocator}).
 */
module io.mooring.allocator {
    requires transitive io.mooring.verbs;
    requires com.github.benmanes.caffeine;
    requires jdk.jfr;

    exports io.mooring.allocator;
}
