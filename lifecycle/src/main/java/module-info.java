/**
 * The resource graph: every object with a native lifetime is destroyed exactly once, after its children, never
 * while pinned, and a handle dropped without {@code close()} is reported and released through a {@code Cleaner}.
 */
module io.mooring.lifecycle {
    exports io.mooring.lifecycle;
}
