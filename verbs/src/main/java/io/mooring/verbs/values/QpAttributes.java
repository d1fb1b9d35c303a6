package io.mooring.verbs.values;

import java.util.Collections;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;
import java.util.StringJoiner;

/**
 * The attributes of a reliable-connected queue pair ({@code struct ibv_qp_attr}), by name: what one
 * {@code ibv_modify_qp} sets and what {@link io.mooring.verbs.QueuePair#query()} reports. Each setter checks its
 * value's range and records its {@link QpAttribute} group, so the verbs mask is derived from what was set
 * ({@link #mask()}), never written by hand. Unset fields read as 0 or null. Its timers are the verbs' 5-bit codes,
 * as {@code ibv_qp_attr} holds them ({@link io.mooring.verbs.ConnectOptions} takes them as durations).
 *
 * <p>An immutable value made by a {@link Builder}, like pyverbs' {@code QPAttr} by name; {@link #toBuilder()} derives
 * one from another, as a provider's query does from what its modifies set.
 */
public final class QpAttributes {
    /** The largest packet sequence number: PSNs are 24 bits. */
    public static final int MAX_PSN = (1 << 24) - 1;

    private final int mask;
    private final QpState state;
    private final Set<Access> access;
    private final int pkeyIndex;
    private final int port;
    private final Mtu pathMtu;
    private final int destQpNumber;
    private final int receivePsn;
    private final int sendPsn;
    private final int maxRdAtomic;
    private final int maxDestRdAtomic;
    private final int minRnrTimer;
    private final int timeout;
    private final int retryCount;
    private final int rnrRetry;
    // the address vector (ah_attr), one group
    private final Gid destGid;
    private final int destLid;
    private final long destToken;
    private final int sourceGidIndex;
    private final int hopLimit;
    private final int trafficClass;
    private final int serviceLevel;

    private QpAttributes(Builder b) {
        this.mask = b.mask;
        this.state = b.state;
        this.access = b.access;
        this.pkeyIndex = b.pkeyIndex;
        this.port = b.port;
        this.pathMtu = b.pathMtu;
        this.destQpNumber = b.destQpNumber;
        this.receivePsn = b.receivePsn;
        this.sendPsn = b.sendPsn;
        this.maxRdAtomic = b.maxRdAtomic;
        this.maxDestRdAtomic = b.maxDestRdAtomic;
        this.minRnrTimer = b.minRnrTimer;
        this.timeout = b.timeout;
        this.retryCount = b.retryCount;
        this.rnrRetry = b.rnrRetry;
        this.destGid = b.destGid;
        this.destLid = b.destLid;
        this.destToken = b.destToken;
        this.sourceGidIndex = b.sourceGidIndex;
        this.hopLimit = b.hopLimit;
        this.trafficClass = b.trafficClass;
        this.serviceLevel = b.serviceLevel;
    }

    /** Nothing set yet: {@code builder().state(QpState.RTS).sendPsn(psn).build()}. */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder with every group set here, to derive other attributes from these. */
    public Builder toBuilder() {
        return new Builder().apply(this);
    }

    /** The {@code IBV_QP_*} mask of the groups set. */
    public int mask() {
        return mask;
    }

    public boolean isSet(QpAttribute attribute) {
        return (mask & attribute.bit()) != 0;
    }

    /** {@code qp_state}: the state to move to, or (queried) the current one. */
    public QpState state() {
        return state;
    }

    /** {@code qp_access_flags}: what the peer may do through this QP (REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC). */
    public Set<Access> access() {
        return access;
    }

    /** {@code pkey_index}: the entry of the port's P_Key table (partition) the QP belongs to. */
    public int pkeyIndex() {
        return pkeyIndex;
    }

    /** {@code port_num}: the local port, from 1. */
    public int port() {
        return port;
    }

    /** {@code path_mtu}: the largest packet payload on the path to the peer. */
    public Mtu pathMtu() {
        return pathMtu;
    }

    /** {@code dest_qp_num}: the peer's queue pair number. */
    public int destQpNumber() {
        return destQpNumber;
    }

    /** {@code rq_psn}: the PSN the receive side expects next (the peer's send PSN at connect). */
    public int receivePsn() {
        return receivePsn;
    }

    /** {@code sq_psn}: the PSN of the next packet sent (the first one at connect). */
    public int sendPsn() {
        return sendPsn;
    }

    /**
     * {@code max_rd_atomic}: READs and atomics this QP may have outstanding as requester (at most the device's
     * {@link DeviceAttributes#maxQpInitRdAtom()}). A device may grant more than asked: rxe rounds up to a power of 2.
     */
    public int maxRdAtomic() {
        return maxRdAtomic;
    }

    /**
     * {@code max_dest_rd_atomic}: incoming READs and atomics this QP keeps resources for as responder (at most the
     * device's {@link DeviceAttributes#maxQpRdAtom()}).
     */
    public int maxDestRdAtomic() {
        return maxDestRdAtomic;
    }

    /**
     * {@code min_rnr_timer}: how long the peer is told to wait before retrying a SEND that found no receive, as the
     * verbs' 5-bit code (12: 0.64 ms; {@link io.mooring.verbs.ConnectOptions#minRnrTimer()} says it as a duration).
     */
    public int minRnrTimerCode() {
        return minRnrTimer;
    }

    /** {@code timeout}: the local ACK timeout's code n, for 4.096 µs × 2^n (0: wait forever). */
    public int ackTimeoutCode() {
        return timeout;
    }

    /** {@code retry_cnt}: transport retries before RETRY_EXC_ERR. */
    public int retryCount() {
        return retryCount;
    }

    /** {@code rnr_retry}: RNR retries before RNR_RETRY_EXC_ERR; 7 retries forever. */
    public int rnrRetry() {
        return rnrRetry;
    }

    /** {@code ah_attr.grh.dgid}: the peer port's GID; a vector with a GID carries a global route header. */
    public Gid destGid() {
        return destGid;
    }

    /**
     * {@code ah_attr.dlid}: the peer port's LID (InfiniBand; the kernel reports 0 on RoCE; the fabric's TCP port of
     * the {@code soft} provider).
     */
    public int destLid() {
        return destLid;
    }

    /**
     * The peer's {@link io.mooring.verbs.QpInfo#token}, which the {@code soft} provider's TCP fabric presents to reach
     * the peer's QP; no {@code ibv_qp_attr} field (rdma-core ignores it), and never reported by a query.
     */
    public long destToken() {
        return destToken;
    }

    /** {@code ah_attr.grh.sgid_index}: the local GID to send from, by its index in the port's GID table. */
    public int sourceGidIndex() {
        return sourceGidIndex;
    }

    /**
     * {@code ah_attr.grh.hop_limit}: the IP TTL on RoCE v2. On RoCE the kernel replaces it with its route's hop
     * limit when it resolves the peer's address, so a query there reports the route's.
     */
    public int hopLimit() {
        return hopLimit;
    }

    /** {@code ah_attr.grh.traffic_class}: the IPv6 traffic class / IPv4 TOS byte (DSCP and ECN) on RoCE v2. */
    public int trafficClass() {
        return trafficClass;
    }

    /** {@code ah_attr.sl}: the InfiniBand service level (rxe keeps none and reports 0). */
    public int serviceLevel() {
        return serviceLevel;
    }

    /** An unmodifiable copy of {@code rights}, which must all be rights a QP can grant its peer. */
    static Set<Access> remoteRights(Set<Access> rights) {
        if (!Access.REMOTE.containsAll(rights)) {
            throw new IllegalArgumentException("a QP grants its peer only " + Access.REMOTE + ", not " + rights);
        }
        var copy = EnumSet.noneOf(Access.class);
        copy.addAll(rights);
        return Collections.unmodifiableSet(copy);
    }

    /**
     * {@code value}, if it lies in {@code [min, max]}; else an error naming the value and the limits (the check every
     * verbs field with a range is held to).
     */
    public static int inRange(int value, int min, int max, String name) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "], was " + value);
        }
        return value;
    }

    /** The groups set and their values, e.g. {@code [STATE=RTS, SQ_PSN=0x1234, TIMEOUT=14]}. */
    @Override
    public String toString() {
        var s = new StringJoiner(", ", "[", "]");
        if (isSet(QpAttribute.STATE)) s.add("STATE=" + state);
        if (isSet(QpAttribute.ACCESS_FLAGS)) s.add("ACCESS_FLAGS=" + access);
        if (isSet(QpAttribute.PKEY_INDEX)) s.add("PKEY_INDEX=" + pkeyIndex);
        if (isSet(QpAttribute.PORT)) s.add("PORT=" + port);
        if (isSet(QpAttribute.ADDRESS_VECTOR)) {
            s.add("ADDRESS_VECTOR=dgid " + destGid + " dlid " + destLid + " sgid_index " + sourceGidIndex
                    + " hop_limit " + hopLimit + " traffic_class " + trafficClass + " sl " + serviceLevel);
        }
        if (isSet(QpAttribute.PATH_MTU)) s.add("PATH_MTU=" + pathMtu);
        if (isSet(QpAttribute.TIMEOUT)) s.add("TIMEOUT=" + timeout);
        if (isSet(QpAttribute.RETRY_COUNT)) s.add("RETRY_COUNT=" + retryCount);
        if (isSet(QpAttribute.RNR_RETRY)) s.add("RNR_RETRY=" + rnrRetry);
        if (isSet(QpAttribute.RQ_PSN)) s.add("RQ_PSN=0x" + Integer.toHexString(receivePsn));
        if (isSet(QpAttribute.MAX_RD_ATOMIC)) s.add("MAX_RD_ATOMIC=" + maxRdAtomic);
        if (isSet(QpAttribute.MIN_RNR_TIMER)) s.add("MIN_RNR_TIMER=" + minRnrTimer);
        if (isSet(QpAttribute.SQ_PSN)) s.add("SQ_PSN=0x" + Integer.toHexString(sendPsn));
        if (isSet(QpAttribute.MAX_DEST_RD_ATOMIC)) s.add("MAX_DEST_RD_ATOMIC=" + maxDestRdAtomic);
        if (isSet(QpAttribute.DEST_QPN)) s.add("DEST_QPN=" + destQpNumber);
        return s.toString();
    }

    /**
     * Attributes set by name: each setter sets the field its getter of {@link QpAttributes} describes, checks its
     * value's range and records its group in the mask. Not thread-safe.
     */
    public static final class Builder {
        private int mask;
        private QpState state;
        private Set<Access> access = Set.of();
        private int pkeyIndex;
        private int port;
        private Mtu pathMtu;
        private int destQpNumber;
        private int receivePsn;
        private int sendPsn;
        private int maxRdAtomic;
        private int maxDestRdAtomic;
        private int minRnrTimer;
        private int timeout;
        private int retryCount;
        private int rnrRetry;
        // the address vector (ah_attr), one group
        private Gid destGid;
        private int destLid;
        private long destToken;
        private int sourceGidIndex;
        private int hopLimit;
        private int trafficClass;
        private int serviceLevel;

        private Builder() {
        }

        private Builder set(QpAttribute attribute) {
            mask |= attribute.bit();
            return this;
        }

        public Builder state(QpState target) {
            this.state = target;
            return set(QpAttribute.STATE);
        }

        public Builder access(Set<Access> rights) {
            this.access = remoteRights(rights);
            return set(QpAttribute.ACCESS_FLAGS);
        }

        public Builder pkeyIndex(int index) {
            this.pkeyIndex = inRange(index, 0, 0xffff, "pkeyIndex");
            return set(QpAttribute.PKEY_INDEX);
        }

        public Builder port(int number) {
            this.port = inRange(number, 1, 0xff, "port");
            return set(QpAttribute.PORT);
        }

        public Builder pathMtu(Mtu mtu) {
            this.pathMtu = Objects.requireNonNull(mtu, "pathMtu");
            return set(QpAttribute.PATH_MTU);
        }

        public Builder destQpNumber(int qpn) {
            this.destQpNumber = inRange(qpn, 0, 0xff_ffff, "destQpNumber");
            return set(QpAttribute.DEST_QPN);
        }

        public Builder receivePsn(int psn) {
            this.receivePsn = inRange(psn, 0, MAX_PSN, "receivePsn");
            return set(QpAttribute.RQ_PSN);
        }

        public Builder sendPsn(int psn) {
            this.sendPsn = inRange(psn, 0, MAX_PSN, "sendPsn");
            return set(QpAttribute.SQ_PSN);
        }

        public Builder maxRdAtomic(int depth) {
            this.maxRdAtomic = inRange(depth, 0, 0xff, "maxRdAtomic");
            return set(QpAttribute.MAX_RD_ATOMIC);
        }

        public Builder maxDestRdAtomic(int depth) {
            this.maxDestRdAtomic = inRange(depth, 0, 0xff, "maxDestRdAtomic");
            return set(QpAttribute.MAX_DEST_RD_ATOMIC);
        }

        public Builder minRnrTimerCode(int code) {
            this.minRnrTimer = inRange(code, 0, 31, "minRnrTimerCode");
            return set(QpAttribute.MIN_RNR_TIMER);
        }

        public Builder ackTimeoutCode(int code) {
            this.timeout = inRange(code, 0, 31, "ackTimeoutCode");
            return set(QpAttribute.TIMEOUT);
        }

        public Builder retryCount(int retries) {
            this.retryCount = inRange(retries, 0, 7, "retryCount");
            return set(QpAttribute.RETRY_COUNT);
        }

        public Builder rnrRetry(int retries) {
            this.rnrRetry = inRange(retries, 0, 7, "rnrRetry");
            return set(QpAttribute.RNR_RETRY);
        }

        public Builder destGid(Gid gid) {
            this.destGid = Objects.requireNonNull(gid, "destGid");
            return set(QpAttribute.ADDRESS_VECTOR);
        }

        public Builder destLid(int lid) {
            this.destLid = inRange(lid, 0, 0xffff, "destLid");
            return set(QpAttribute.ADDRESS_VECTOR);
        }

        public Builder destToken(long token) {
            this.destToken = token;
            return set(QpAttribute.ADDRESS_VECTOR);
        }

        public Builder sourceGidIndex(int index) {
            this.sourceGidIndex = inRange(index, 0, 0xff, "sourceGidIndex");
            return set(QpAttribute.ADDRESS_VECTOR);
        }

        public Builder hopLimit(int hops) {
            this.hopLimit = inRange(hops, 0, 0xff, "hopLimit");
            return set(QpAttribute.ADDRESS_VECTOR);
        }

        public Builder trafficClass(int value) {
            this.trafficClass = inRange(value, 0, 0xff, "trafficClass");
            return set(QpAttribute.ADDRESS_VECTOR);
        }

        public Builder serviceLevel(int level) {
            this.serviceLevel = inRange(level, 0, 15, "serviceLevel");
            return set(QpAttribute.ADDRESS_VECTOR);
        }

        /** Sets here every group that {@code c} sets, to its values: what a NIC keeps after a modify. */
        public Builder apply(QpAttributes c) {
            if (c.isSet(QpAttribute.STATE)) state = c.state;
            if (c.isSet(QpAttribute.ACCESS_FLAGS)) access = c.access;
            if (c.isSet(QpAttribute.PKEY_INDEX)) pkeyIndex = c.pkeyIndex;
            if (c.isSet(QpAttribute.PORT)) port = c.port;
            if (c.isSet(QpAttribute.PATH_MTU)) pathMtu = c.pathMtu;
            if (c.isSet(QpAttribute.DEST_QPN)) destQpNumber = c.destQpNumber;
            if (c.isSet(QpAttribute.RQ_PSN)) receivePsn = c.receivePsn;
            if (c.isSet(QpAttribute.SQ_PSN)) sendPsn = c.sendPsn;
            if (c.isSet(QpAttribute.MAX_RD_ATOMIC)) maxRdAtomic = c.maxRdAtomic;
            if (c.isSet(QpAttribute.MAX_DEST_RD_ATOMIC)) maxDestRdAtomic = c.maxDestRdAtomic;
            if (c.isSet(QpAttribute.MIN_RNR_TIMER)) minRnrTimer = c.minRnrTimer;
            if (c.isSet(QpAttribute.TIMEOUT)) timeout = c.timeout;
            if (c.isSet(QpAttribute.RETRY_COUNT)) retryCount = c.retryCount;
            if (c.isSet(QpAttribute.RNR_RETRY)) rnrRetry = c.rnrRetry;
            if (c.isSet(QpAttribute.ADDRESS_VECTOR)) {
                destGid = c.destGid;
                destLid = c.destLid;
                destToken = c.destToken;
                sourceGidIndex = c.sourceGidIndex;
                hopLimit = c.hopLimit;
                trafficClass = c.trafficClass;
                serviceLevel = c.serviceLevel;
            }
            mask |= c.mask;
            return this;
        }

        /** The attributes set so far; the builder may go on. */
        public QpAttributes build() {
            return new QpAttributes(this);
        }
    }
}
