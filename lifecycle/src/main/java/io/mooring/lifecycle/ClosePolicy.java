package io.mooring.lifecycle;

/**
 * What {@link Resource#close()} does when the resource still has live children.
 *
 * <p>Pins are temporary holds (an in-flight work request), so under either policy a pinned resource is
 * destroyed when its last pin is released; the policies differ only in how they treat children.
 */
public enum ClosePolicy {
    /**
     * Reference-counted ("Arc") semantics, as in async-rdma and rust-ibverbs: the handle closes at once and
     * the native destroy runs when the last child has been destroyed.
     */
    DEFERRED,
    /**
     * Closing a parent with live children throws {@link ResourceBusyException} listing them and leaves the
     * parent open. {@link Resource#closeTree()} still closes a whole subtree.
     */
    STRICT
}
