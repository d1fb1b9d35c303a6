/**
 * The registered slab arena ({@code io.mooring.allocator}): blocks are {@code MemorySegment} slices of a few large
 * registered memory regions; and the registration cache ({@code io.mooring.regcache}) for memory the caller brings.
 * Both call native code ({@code mmap}, {@code getpagesize}, widening segments to whole pages), so an application
 * grants this module native access ({@code --enable-native-access=io.mooring.allocator}).
 */
module io.mooring.allocator {
    requires transitive io.mooring.verbs;
    requires com.github.benmanes.caffeine;
    requires jdk.jfr;

    exports io.mooring.allocator;
    exports io.mooring.regcache;
}
