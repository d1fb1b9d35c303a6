package io.mooring.verbs;

import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.DeviceAttributes;
import io.mooring.verbs.values.PortAttributes;
import io.mooring.verbs.values.QpAttribute;
import io.mooring.verbs.values.QpAttributes;
import io.mooring.verbs.values.QpCapabilities;
import java.time.Duration;
import java.util.OptionalInt;
import java.util.Set;

/**
 * How {@link QueuePair#connect} moves a queue pair through INIT, RTR and RTS, built by name with
 * {@link #builder()} or from other options with {@link #toBuilder()}. Immutable. The defaults are what perftest and
 * most RC applications use. Each setter checks its value's range (the same checks as {@link QpAttributes}, which
 * holds the values); {@link QueuePair} checks the rest against the device before the first transition, so refused
 * options leave the QP where it was.
 */
public final class ConnectOptions {
    /** Port 1, automatic GID, remote read/write/atomic allowed, a fresh random PSN, perftest's timers and retries. */
    public static final ConnectOptions DEFAULT = builder().build();

    /** The chosen values. */
    private final QpAttributes values;
    private final int gidIndex;

    private ConnectOptions(Builder b) {
        this.values = b.values.build();
        this.gidIndex = b.gidIndex;
    }

    /** The {@link #DEFAULT} options, to change by name. */
    public static Builder builder() {
        return new Builder(QpAttributes.builder().port(1).access(Access.REMOTE).pkeyIndex(0).minRnrTimerCode(12)
                .ackTimeoutCode(14).retryCount(7).rnrRetry(7).maxRdAtomic(1).maxDestRdAtomic(1).trafficClass(0)
                .serviceLevel(0).hopLimit(64), -1);
    }

    /** These options, to change by name. */
    public Builder toBuilder() {
        return new Builder(values.toBuilder(), gidIndex);
    }

    /** The local port (INIT). Default 1. */
    public int port() {
        return values.port();
    }

    /**
     * The local GID to send from, by index (RTR); -1 (the default) picks the port's first IPv4-mapped GID (the RoCE v2
     * one, index 1 on rxe), else index 0.
     */
    public int gidIndex() {
        return gidIndex;
    }

    /** What the peer may do through this QP: REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC (INIT). Default all three. */
    public Set<Access> access() {
        return values.access();
    }

    /**
     * The PSN this QP starts sending with (RTS), which {@link QueuePair#info} hands the peer; empty (the default)
     * for the random one the QP draws anew at creation and at every reset, so that packets of an earlier
     * connection cannot pass for this one's.
     */
    public OptionalInt sendPsn() {
        return values.isSet(QpAttribute.SQ_PSN) ? OptionalInt.of(values.sendPsn()) : OptionalInt.empty();
    }

    /** The partition: an index into the port's P_Key table (INIT). Default 0. */
    public int pkeyIndex() {
        return values.pkeyIndex();
    }

    /**
     * How long the peer is told to wait before retrying a SEND that found no receive (RTR). One of the 32 delays the
     * verbs can say, from 10 µs to 655.36 ms: the shortest at least as long as the one set. Default 0.64 ms.
     */
    public Duration minRnrTimer() {
        return IbTimers.rnrTimer(values.minRnrTimerCode());
    }

    /**
     * How long a send waits for the peer's ACK before it retries (RTS). A power of two times 4.096 µs, from 8.192 µs
     * to about 2.4 hours: the shortest at least as long as the one set. Default 67.108864 ms (4.096 µs × 2^14).
     */
    public Duration ackTimeout() {
        return IbTimers.ackTimeout(values.ackTimeoutCode());
    }

    /** {@link #minRnrTimer()} as the verbs say it. */
    int minRnrTimerCode() {
        return values.minRnrTimerCode();
    }

    /** {@link #ackTimeout()} as the verbs say it. */
    int ackTimeoutCode() {
        return values.ackTimeoutCode();
    }

    /** Transport retries before RETRY_EXC_ERR (RTS). Default 7. */
    public int retryCount() {
        return values.retryCount();
    }

    /** RNR retries before RNR_RETRY_EXC_ERR; 7 (the default) retries forever (RTS). */
    public int rnrRetry() {
        return values.rnrRetry();
    }

    /**
     * READs and atomics this QP may have outstanding as requester (RTS), at most the device's
     * {@link DeviceAttributes#maxQpInitRdAtom()}. Default 1.
     */
    public int maxRdAtomic() {
        return values.maxRdAtomic();
    }

    /**
     * Incoming READs and atomics this QP accepts at once as responder (RTR), at most the device's
     * {@link DeviceAttributes#maxQpRdAtom()}. Default 1.
     */
    public int maxDestRdAtomic() {
        return values.maxDestRdAtomic();
    }

    /** The traffic class of the global route header (RoCE v2: the IP TOS byte) (RTR). Default 0. */
    public int trafficClass() {
        return values.trafficClass();
    }

    /** The InfiniBand service level, 0–15 (RTR). Default 0. */
    public int serviceLevel() {
        return values.serviceLevel();
    }

    /** The hop limit of the global route header (RTR); on RoCE the kernel uses its route's instead. Default 64. */
    public int hopLimit() {
        return values.hopLimit();
    }

    /**
     * Checks what depends on the device: the port, the GID and P_Key indexes, the READ/atomic depths.
     *
     * @throws IllegalArgumentException naming the option, its value and the device's limit
     */
    void requireSupportedBy(DeviceContext context) {
        PortAttributes p = context.port(port());
        context.gid(port(), gidIndex);
        if (pkeyIndex() >= p.pkeyTableLength()) {
            throw new IllegalArgumentException("pkeyIndex " + pkeyIndex() + " is outside the " + p.pkeyTableLength()
                    + "-entry P_Key table of port " + port() + " of " + context.device());
        }
        DeviceAttributes device = context.device().attributes();
        QpCapabilities.within(maxRdAtomic(), device.maxQpInitRdAtom(), "maxRdAtomic", "max_qp_init_rd_atom");
        QpCapabilities.within(maxDestRdAtomic(), device.maxQpRdAtom(), "maxDestRdAtomic", "max_qp_rd_atom");
    }

    @Override
    public String toString() {
        return "ConnectOptions" + values + (gidIndex < 0 ? "" : " gidIndex " + gidIndex);
    }

    /** Collects options by name; each setter checks its value's range. */
    public static final class Builder {
        private final QpAttributes.Builder values;
        private int gidIndex;

        private Builder(QpAttributes.Builder values, int gidIndex) {
            this.values = values;
            this.gidIndex = gidIndex;
        }

        /** See {@link ConnectOptions#port()}. */
        public Builder port(int number) {
            values.port(number);
            return this;
        }

        /** See {@link ConnectOptions#gidIndex()}. */
        public Builder gidIndex(int index) {
            this.gidIndex = QpAttributes.inRange(index, -1, 0xff, "gidIndex");
            return this;
        }

        /** See {@link ConnectOptions#access()}. */
        public Builder access(Set<Access> rights) {
            values.access(rights);
            return this;
        }

        /**
         * Starts sending with {@code psn} instead of a random PSN; see {@link ConnectOptions#sendPsn()}.
         *
         * @throws IllegalArgumentException if it does not fit in 24 bits
         */
        public Builder sendPsn(int psn) {
            values.sendPsn(psn);
            return this;
        }

        /** See {@link ConnectOptions#pkeyIndex()}. */
        public Builder pkeyIndex(int index) {
            values.pkeyIndex(index);
            return this;
        }

        /**
         * See {@link ConnectOptions#minRnrTimer()}: rounded up to a delay the verbs can say.
         *
         * @throws IllegalArgumentException if it is not positive or longer than 655.36 ms
         */
        public Builder minRnrTimer(Duration delay) {
            values.minRnrTimerCode(IbTimers.rnrTimerCode(delay));
            return this;
        }

        /**
         * See {@link ConnectOptions#ackTimeout()}: rounded up to a power of two times 4.096 µs.
         *
         * @throws IllegalArgumentException if it is not positive or longer than 4.096 µs × 2^31
         */
        public Builder ackTimeout(Duration timeout) {
            values.ackTimeoutCode(IbTimers.ackTimeoutCode(timeout));
            return this;
        }

        /** See {@link ConnectOptions#retryCount()}. */
        public Builder retryCount(int retries) {
            values.retryCount(retries);
            return this;
        }

        /** See {@link ConnectOptions#rnrRetry()}. */
        public Builder rnrRetry(int retries) {
            values.rnrRetry(retries);
            return this;
        }

        /** See {@link ConnectOptions#maxRdAtomic()}. */
        public Builder maxRdAtomic(int depth) {
            values.maxRdAtomic(depth);
            return this;
        }

        /** See {@link ConnectOptions#maxDestRdAtomic()}. */
        public Builder maxDestRdAtomic(int depth) {
            values.maxDestRdAtomic(depth);
            return this;
        }

        /** See {@link ConnectOptions#trafficClass()}. */
        public Builder trafficClass(int value) {
            values.trafficClass(value);
            return this;
        }

        /** See {@link ConnectOptions#serviceLevel()}. */
        public Builder serviceLevel(int level) {
            values.serviceLevel(level);
            return this;
        }

        /** See {@link ConnectOptions#hopLimit()}. */
        public Builder hopLimit(int hops) {
            values.hopLimit(hops);
            return this;
        }

        public ConnectOptions build() {
            return new ConnectOptions(this);
        }
    }
}
