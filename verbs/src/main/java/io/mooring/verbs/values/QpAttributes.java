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
 * ({@link #mask()}), never written by hand. Unset fields read as 0 or null.
 *
 * <p>A mutable value to fill and pass, like pyverbs' {@code QPAttr}: not thread-safe, and nothing keeps it after the
 * call it was passed to.
 */
public final class QpAttributes {
    /** The largest packet sequence number: PSNs are 24 bits. */
    public static final int MAX_PSN = (1 << 24) - 1;

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

    /** Attributes with nothing set. */
    public QpAttributes() {
    }

    /** The {@code IBV_QP_*} mask of the groups set. */
    public int mask() {
        return mask;
    }

    public boolean isSet(QpAttribute attribute) {
        return (mask & attribute.bit()) != 0;
    }

    private QpAttributes set(QpAttribute attribute) {
        mask |= attribute.bit();
        return this;
    }

    /** {@code qp_state}: the state to move to, or (queried) the current one. */
    public QpState state() {
        return state;
    }

    public QpAttributes state(QpState target) {
        this.state = target;
        return set(QpAttribute.STATE);
    }

    /** {@code qp_access_flags}: what the peer may do through this QP (REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC). */
    public Set<Access> access() {
        return access;
    }

    public QpAttributes access(Set<Access> rights) {
        this.access = remoteRights(rights);
        return set(QpAttribute.ACCESS_FLAGS);
    }

    /** {@code pkey_index}: the entry of the port's P_Key table (partition) the QP belongs to. */
    public int pkeyIndex() {
        return pkeyIndex;
    }

    public QpAttributes pkeyIndex(int index) {
        this.pkeyIndex = inRange(index, 0, 0xffff, "pkeyIndex");
        return set(QpAttribute.PKEY_INDEX);
    }

    /** {@code port_num}: the local port, from 1. */
    public int port() {
        return port;
    }

    public QpAttributes port(int number) {
        this.port = inRange(number, 1, 0xff, "port");
        return set(QpAttribute.PORT);
    }

    /** {@code path_mtu}: the largest packet payload on the path to the peer. */
    public Mtu pathMtu() {
        return pathMtu;
    }

    public QpAttributes pathMtu(Mtu mtu) {
        this.pathMtu = Objects.requireNonNull(mtu, "pathMtu");
        return set(QpAttribute.PATH_MTU);
    }

    /** {@code dest_qp_num}: the peer's queue pair number. */
    public int destQpNumber() {
        return destQpNumber;
    }

    public QpAttributes destQpNumber(int qpn) {
        this.destQpNumber = inRange(qpn, 0, 0xff_ffff, "destQpNumber");
        return set(QpAttribute.DEST_QPN);
    }

    /** {@code rq_psn}: the PSN the receive side expects next (the peer's send PSN at connect). */
    public int receivePsn() {
        return receivePsn;
    }

    public QpAttributes receivePsn(int psn) {
        this.receivePsn = inRange(psn, 0, MAX_PSN, "receivePsn");
        return set(QpAttribute.RQ_PSN);
    }

    /** {@code sq_psn}: the PSN of the next packet sent (the first one at connect). */
    public int sendPsn() {
        return sendPsn;
    }

    public QpAttributes sendPsn(int psn) {
        this.sendPsn = inRange(psn, 0, MAX_PSN, "sendPsn");
        return set(QpAttribute.SQ_PSN);
    }

    /**
     * {@code max_rd_atomic}: READs and atomics this QP may have outstanding as requester (at most the device's
     * {@link DeviceAttributes#maxQpInitRdAtom()}). A device may grant more than asked: rxe rounds up to a power of 2.
     */
    public int maxRdAtomic() {
        return maxRdAtomic;
    }

    public QpAttributes maxRdAtomic(int depth) {
        this.maxRdAtomic = inRange(depth, 0, 0xff, "maxRdAtomic");
        return set(QpAttribute.MAX_RD_ATOMIC);
    }

    /**
     * {@code max_dest_rd_atomic}: incoming READs and atomics this QP keeps resources for as responder (at most the
     * device's {@link DeviceAttributes#maxQpRdAtom()}).
     */
    public int maxDestRdAtomic() {
        return maxDestRdAtomic;
    }

    public QpAttributes maxDestRdAtomic(int depth) {
        this.maxDestRdAtomic = inRange(depth, 0, 0xff, "maxDestRdAtomic");
        return set(QpAttribute.MAX_DEST_RD_ATOMIC);
    }

    /** {@code min_rnr_timer}: how long the peer is told to wait before retrying a SEND that found no receive (code). */
    public int minRnrTimer() {
        return minRnrTimer;
    }

    public QpAttributes minRnrTimer(int code) {
        this.minRnrTimer = inRange(code, 0, 31, "minRnrTimer");
        return set(QpAttribute.MIN_RNR_TIMER);
    }

    /** {@code timeout}: the local ACK timeout, 4.096 µs × 2^timeout (0: wait forever). */
    public int timeout() {
        return timeout;
    }

    public QpAttributes timeout(int code) {
        this.timeout = inRange(code, 0, 31, "timeout");
        return set(QpAttribute.TIMEOUT);
    }

    /** {@code retry_cnt}: transport retries before RETRY_EXC_ERR. */
    public int retryCount() {
        return retryCount;
    }

    public QpAttributes retryCount(int retries) {
        this.retryCount = inRange(retries, 0, 7, "retryCount");
        return set(QpAttribute.RETRY_COUNT);
    }

    /** {@code rnr_retry}: RNR retries before RNR_RETRY_EXC_ERR; 7 retries forever. */
    public int rnrRetry() {
        return rnrRetry;
    }

    public QpAttributes rnrRetry(int retries) {
        this.rnrRetry = inRange(retries, 0, 7, "rnrRetry");
        return set(QpAttribute.RNR_RETRY);
    }

    /** {@code ah_attr.grh.dgid}: the peer port's GID; a vector with a GID carries a global route header. */
    public Gid destGid() {
        return destGid;
    }

    public QpAttributes destGid(Gid gid) {
        this.destGid = Objects.requireNonNull(gid, "destGid");
        return set(QpAttribute.ADDRESS_VECTOR);
    }

    /**
     * {@code ah_attr.dlid}: the peer port's LID (InfiniBand; the kernel reports 0 on RoCE; the fabric's TCP port of
     * the {@code soft} provider).
     */
    public int destLid() {
        return destLid;
    }

    public QpAttributes destLid(int lid) {
        this.destLid = inRange(lid, 0, 0xffff, "destLid");
        return set(QpAttribute.ADDRESS_VECTOR);
    }

    /**
     * The peer's {@link io.mooring.verbs.QpInfo#token}, which the {@code soft} provider's TCP fabric presents to reach
     * the peer's QP; no {@code ibv_qp_attr} field (rdma-core ignores it), and never reported by a query.
     */
    public long destToken() {
        return destToken;
    }

    public QpAttributes destToken(long token) {
        this.destToken = token;
        return set(QpAttribute.ADDRESS_VECTOR);
    }

    /** {@code ah_attr.grh.sgid_index}: the local GID to send from, by its index in the port's GID table. */
    public int sourceGidIndex() {
        return sourceGidIndex;
    }

    public QpAttributes sourceGidIndex(int index) {
        this.sourceGidIndex = inRange(index, 0, 0xff, "sourceGidIndex");
        return set(QpAttribute.ADDRESS_VECTOR);
    }

    /**
     * {@code ah_attr.grh.hop_limit}: the IP TTL on RoCE v2. On RoCE the kernel replaces it with its route's hop
     * limit when it resolves the peer's address, so a query there reports the route's.
     */
    public int hopLimit() {
        return hopLimit;
    }

    public QpAttributes hopLimit(int hops) {
        this.hopLimit = inRange(hops, 0, 0xff, "hopLimit");
        return set(QpAttribute.ADDRESS_VECTOR);
    }

    /** {@code ah_attr.grh.traffic_class}: the IPv6 traffic class / IPv4 TOS byte (DSCP and ECN) on RoCE v2. */
    public int trafficClass() {
        return trafficClass;
    }

    public QpAttributes trafficClass(int value) {
        this.trafficClass = inRange(value, 0, 0xff, "trafficClass");
        return set(QpAttribute.ADDRESS_VECTOR);
    }

    /** {@code ah_attr.sl}: the InfiniBand service level (rxe keeps none and reports 0). */
    public int serviceLevel() {
        return serviceLevel;
    }

    public QpAttributes serviceLevel(int level) {
        this.serviceLevel = inRange(level, 0, 15, "serviceLevel");
        return set(QpAttribute.ADDRESS_VECTOR);
    }

    /** Sets here every group that {@code c} sets, to its values: what a NIC keeps after a modify. */
    public QpAttributes apply(QpAttributes c) {
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

    /** A copy with the same fields set. */
    public QpAttributes copy() {
        return new QpAttributes().apply(this);
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
}
