package io.mooring.lifecycle;

/**
 * Releases one native object (e.g. calls {@code ibv_dealloc_pd}). The graph runs it exactly once, after every
 * child was destroyed and every pin released.
 *
 * <p>It must not reference the {@link Resource} handle it belongs to: the graph runs it from a
 * {@link java.lang.ref.Cleaner} when the handle becomes unreachable, which a reference would prevent. Capture
 * the native pointer instead.
 */
@FunctionalInterface
public interface DestroyAction {
    /** Releases the native object; throws if the native call reported an error. */
    void destroy() throws Exception;
}
