package io.mooring.verbs;

import io.mooring.lifecycle.Resource;

/**
 * What every verbs handle is: a place in the lifecycle graph. Closing follows the graph's policy (by default
 * the native destroy waits for the object's children and pins); {@link #resource()} gives the state, the
 * children, pins and {@code closeTree()}.
 */
public abstract sealed class VerbsObject implements AutoCloseable
        permits DeviceContext, ProtectionDomain, MemoryRegion, MemoryWindow, CompletionQueue, QueuePair,
        SharedReceiveQueue {
    final Resource resource;

    VerbsObject(Resource resource) {
        this.resource = resource;
    }

    /** Its place in the lifecycle graph (state, children, pins, closeTree). */
    public final Resource resource() {
        return resource;
    }

    /** Closes the handle; the native object is destroyed once nothing depends on it any more. Idempotent. */
    @Override
    public final void close() {
        resource.close();
    }

    @Override
    public String toString() {
        return resource.info().name();
    }
}
