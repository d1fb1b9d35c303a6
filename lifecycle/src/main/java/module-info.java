/**
 * The resource graph: every object with a native lifetime is destroyed exactly once, after its children, never
 * while pinned, and a handle dropped without {@code close()} is reported and released by the {@code Housekeeper}
 * (the one background thread of every Mooring module). Also the root of Mooring's exceptions,
 * {@code MooringException}.
 */
module io.mooring.lifecycle {
    exports io.mooring.lifecycle;
}
