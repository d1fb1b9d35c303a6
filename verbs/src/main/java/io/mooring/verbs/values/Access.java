package io.mooring.verbs.values;

import java.util.EnumSet;
import java.util.Set;

/** Access rights of a memory region, window or queue pair ({@code enum ibv_access_flags}). */
public enum Access {
    /** The local NIC may write into it (receive buffers, READ and atomic results). */
    LOCAL_WRITE(1),
    /** Peers may RDMA WRITE into it. Requires LOCAL_WRITE. */
    REMOTE_WRITE(1 << 1),
    /** Peers may RDMA READ from it. */
    REMOTE_READ(1 << 2),
    /** Peers may run atomics on it. Requires LOCAL_WRITE. */
    REMOTE_ATOMIC(1 << 3),
    /** Memory windows may be bound to (a range of) it. */
    MW_BIND(1 << 4);

    /** The rights a peer exercises: what a QP may allow its peer, a window or a lease may grant. */
    public static final Set<Access> REMOTE = Set.copyOf(EnumSet.of(REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC));

    private final int bit;

    Access(int bit) {
        this.bit = bit;
    }

    /** Whether the NIC writes local memory for a peer exercising this right, so the memory needs LOCAL_WRITE. */
    public boolean needsLocalWrite() {
        return !writableFor(bit, 0);
    }

    /** The verbs bit ({@code IBV_ACCESS_*}). */
    public int bit() {
        return bit;
    }

    /** The verbs bit mask of {@code rights}. */
    public static int mask(Set<Access> rights) {
        int m = 0;
        for (Access a : rights) m |= a.bit;
        return m;
    }

    /** The rights in a verbs bit mask (unknown bits are ignored). */
    public static Set<Access> of(int mask) {
        EnumSet<Access> rights = EnumSet.noneOf(Access.class);
        for (Access a : values()) if ((mask & a.bit) != 0) rights.add(a);
        return rights;
    }

    /**
     * The LOCAL_WRITE rule, in verbs bit masks: whether memory registered with {@code memory} may serve a peer
     * exercising {@code rights} — remote write and atomics need the NIC to write it, so it must be locally writable.
     * A region's own rights pass as both (what {@code ibv_reg_mr} checks); a window bound over a region passes its
     * rights and the region's (what a bind checks).
     */
    public static boolean writableFor(int rights, int memory) {
        return (rights & (REMOTE_WRITE.bit | REMOTE_ATOMIC.bit)) == 0 || (memory & LOCAL_WRITE.bit) != 0;
    }

    /**
     * Checks the rule rdma-core enforces with EINVAL ({@link #writableFor}): a region peers may write or run atomics
     * on must also be locally writable. Public for layers that serve requests from existing regions (a registration
     * cache), so a request is refused the same way whether or not it reaches {@code ibv_reg_mr}.
     *
     * @throws IllegalArgumentException naming the missing right
     */
    public static void requireConsistent(Set<Access> rights, String what) {
        int mask = mask(rights);
        if (!writableFor(mask, mask)) {
            throw new IllegalArgumentException(what + " with " + rights + " also needs LOCAL_WRITE:"
                    + " the NIC must be allowed to write what peers write (ibv_reg_mr would fail with EINVAL)");
        }
    }
}
