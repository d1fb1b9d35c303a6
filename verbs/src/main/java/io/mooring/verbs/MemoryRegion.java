package io.mooring.verbs;

import io.mooring.lifecycle.Resource;
import io.mooring.verbs.spi.MrOps;
import io.mooring.verbs.values.Access;
import java.lang.foreign.MemorySegment;
import java.util.Set;

/**
 * Registered memory ({@code struct ibv_mr}): the NIC may read and write it, locally through {@link #lkey()}
 * and, for the rights granted, remotely through {@link #rkey()}. Deregistration waits for every work request
 * that uses it and every window bound to it.
 */
public final class MemoryRegion extends VerbsObject {
    private final ProtectionDomain pd;
    private final MrOps ops;
    private final MemorySegment segment;
    private final Set<Access> access;

    MemoryRegion(ProtectionDomain pd, MrOps ops, Resource resource, MemorySegment segment, Set<Access> access) {
        super(resource);
        this.pd = pd;
        this.ops = ops;
        this.segment = segment;
        this.access = access;
    }

    public ProtectionDomain pd() {
        return pd;
    }

    /** The registered memory. */
    public MemorySegment segment() {
        resource.checkOpen();
        return segment;
    }

    public long address() {
        return segment.address();
    }

    public long length() {
        return segment.byteSize();
    }

    public Set<Access> access() {
        return access;
    }

    /** The key local work requests name it by. */
    public int lkey() {
        resource.checkOpen();
        return ops.lkey();
    }

    /** The key peers name it by; useful only for the remote rights in {@link #access()}. */
    public int rkey() {
        resource.checkOpen();
        return ops.rkey();
    }

    MrOps ops() {
        return ops;
    }

}
