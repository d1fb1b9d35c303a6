package io.mooring.verbs.values;

import java.util.Set;

/**
 * What a device supports ({@code struct ibv_device_attr}, the parts Mooring uses), built by name with
 * {@link #builder()}. Immutable.
 */
public final class DeviceAttributes {
    private final long maxMrSize;
    private final int maxQp;
    private final int maxQpWr;
    private final int maxSge;
    private final int maxCq;
    private final int maxCqe;
    private final int maxMr;
    private final int maxMw;
    private final int maxQpRdAtom;
    private final int maxQpInitRdAtom;
    private final int maxSrq;
    private final int maxSrqWr;
    private final int maxSrqSge;
    private final boolean atomics;
    private final Set<MwType> windowTypes;
    private final int maxInlineData;
    private final int ports;

    private DeviceAttributes(Builder b) {
        this.maxMrSize = b.maxMrSize;
        this.maxQp = b.maxQp;
        this.maxQpWr = b.maxQpWr;
        this.maxSge = b.maxSge;
        this.maxCq = b.maxCq;
        this.maxCqe = b.maxCqe;
        this.maxMr = b.maxMr;
        this.maxMw = b.maxMw;
        this.maxQpRdAtom = b.maxQpRdAtom;
        this.maxQpInitRdAtom = b.maxQpInitRdAtom;
        this.maxSrq = b.maxSrq;
        this.maxSrqWr = b.maxSrqWr;
        this.maxSrqSge = b.maxSrqSge;
        this.atomics = b.atomics;
        this.windowTypes = b.windowTypes;
        this.maxInlineData = b.maxInlineData;
        this.ports = b.ports;
    }

    /** Attributes that are all 0, false or empty until set. */
    public static Builder builder() {
        return new Builder();
    }

    /** {@code max_mr_size}: largest memory region in bytes. */
    public long maxMrSize() {
        return maxMrSize;
    }

    /** {@code max_qp}: queue pairs per device. */
    public int maxQp() {
        return maxQp;
    }

    /** {@code max_qp_wr}: work requests per queue. */
    public int maxQpWr() {
        return maxQpWr;
    }

    /** {@code max_sge}: scatter/gather entries per work request. */
    public int maxSge() {
        return maxSge;
    }

    /** {@code max_cq}: completion queues per device. */
    public int maxCq() {
        return maxCq;
    }

    /** {@code max_cqe}: entries per completion queue. */
    public int maxCqe() {
        return maxCqe;
    }

    /** {@code max_mr}: memory regions per device. */
    public int maxMr() {
        return maxMr;
    }

    /** {@code max_mw}: memory windows per device (0: none). */
    public int maxMw() {
        return maxMw;
    }

    /**
     * {@code max_qp_rd_atom}: incoming READs and atomics a QP can have outstanding as responder, the limit of
     * {@link io.mooring.verbs.ConnectOptions#maxDestRdAtomic()}.
     */
    public int maxQpRdAtom() {
        return maxQpRdAtom;
    }

    /**
     * {@code max_qp_init_rd_atom}: READs and atomics a QP can have outstanding as requester, the limit of
     * {@link io.mooring.verbs.ConnectOptions#maxRdAtomic()}.
     */
    public int maxQpInitRdAtom() {
        return maxQpInitRdAtom;
    }

    /** {@code max_srq}: shared receive queues per device (0: none). */
    public int maxSrq() {
        return maxSrq;
    }

    /** {@code max_srq_wr}: receives a shared receive queue holds. */
    public int maxSrqWr() {
        return maxSrqWr;
    }

    /** {@code max_srq_sge}: scatter/gather entries per receive of a shared receive queue. */
    public int maxSrqSge() {
        return maxSrqSge;
    }

    /** {@code atomic_cap} is not NONE: RDMA atomics are supported. */
    public boolean atomics() {
        return atomics;
    }

    /** The memory window types supported (from {@code device_cap_flags}). */
    public Set<MwType> windowTypes() {
        return windowTypes;
    }

    /** Bytes a send may carry inline (copied at post time); not in {@code ibv_device_attr}, found by probing. */
    public int maxInlineData() {
        return maxInlineData;
    }

    /** {@code phys_port_cnt}: number of physical ports. */
    public int ports() {
        return ports;
    }

    @Override
    public String toString() {
        return "DeviceAttributes[max_mr_size=" + maxMrSize + ", max_qp=" + maxQp + ", max_qp_wr=" + maxQpWr
                + ", max_sge=" + maxSge + ", max_cq=" + maxCq + ", max_cqe=" + maxCqe + ", max_mr=" + maxMr
                + ", max_mw=" + maxMw + ", max_qp_rd_atom=" + maxQpRdAtom + ", max_qp_init_rd_atom=" + maxQpInitRdAtom
                + ", max_srq=" + maxSrq + ", max_srq_wr=" + maxSrqWr + ", max_srq_sge=" + maxSrqSge + ", atomics=" + atomics + ", mw_types=" + windowTypes + ", max_inline_data=" + maxInlineData
                + ", ports=" + ports + "]";
    }

    /** Collects the attributes by name; what is not set stays 0, false or empty. */
    public static final class Builder {
        private long maxMrSize;
        private int maxQp;
        private int maxQpWr;
        private int maxSge;
        private int maxCq;
        private int maxCqe;
        private int maxMr;
        private int maxMw;
        private int maxQpRdAtom;
        private int maxQpInitRdAtom;
        private int maxSrq;
        private int maxSrqWr;
        private int maxSrqSge;
        private boolean atomics;
        private Set<MwType> windowTypes = Set.of();
        private int maxInlineData;
        private int ports;

        private Builder() {
        }

        public Builder maxMrSize(long bytes) {
            this.maxMrSize = bytes;
            return this;
        }

        public Builder maxQp(int count) {
            this.maxQp = count;
            return this;
        }

        public Builder maxQpWr(int count) {
            this.maxQpWr = count;
            return this;
        }

        public Builder maxSge(int count) {
            this.maxSge = count;
            return this;
        }

        public Builder maxCq(int count) {
            this.maxCq = count;
            return this;
        }

        public Builder maxCqe(int count) {
            this.maxCqe = count;
            return this;
        }

        public Builder maxMr(int count) {
            this.maxMr = count;
            return this;
        }

        public Builder maxMw(int count) {
            this.maxMw = count;
            return this;
        }

        public Builder maxQpRdAtom(int depth) {
            this.maxQpRdAtom = depth;
            return this;
        }

        public Builder maxQpInitRdAtom(int depth) {
            this.maxQpInitRdAtom = depth;
            return this;
        }

        public Builder maxSrq(int count) {
            this.maxSrq = count;
            return this;
        }

        public Builder maxSrqWr(int count) {
            this.maxSrqWr = count;
            return this;
        }

        public Builder maxSrqSge(int count) {
            this.maxSrqSge = count;
            return this;
        }

        public Builder atomics(boolean supported) {
            this.atomics = supported;
            return this;
        }

        public Builder windowTypes(Set<MwType> types) {
            this.windowTypes = Set.copyOf(types);
            return this;
        }

        public Builder maxInlineData(int bytes) {
            this.maxInlineData = bytes;
            return this;
        }

        public Builder ports(int count) {
            this.ports = count;
            return this;
        }

        public DeviceAttributes build() {
            return new DeviceAttributes(this);
        }
    }
}
