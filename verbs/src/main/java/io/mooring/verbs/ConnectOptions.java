package io.mooring.verbs;

import java.util.EnumSet;
import java.util.Set;

/**
 * How {@link QueuePair#connect} moves a queue pair through INIT, RTR and RTS. The defaults are what perftest
 * and most RC applications use.
 *
 * @param port          local port number (INIT)
 * @param gidIndex      local GID index used as source GID (RTR); -1 picks the port's first IPv4-mapped GID (the
 *                      RoCE v2 one, index 1 on rxe), else index 0
 * @param access        what the peer may do through this QP: REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC (INIT)
 * @param minRnrTimer   how long the peer is told to wait before retrying a SEND that found no receive,
 *                      as the 5-bit IB code (12 ≈ 0.64 ms) (RTR)
 * @param timeout       local ACK timeout, 4.096 µs × 2^timeout (14 ≈ 67 ms) (RTS)
 * @param retryCount    transport retries before RETRY_EXC_ERR (RTS)
 * @param rnrRetry      RNR retries before RNR_RETRY_EXC_ERR; 7 means retry forever (RTS)
 * @param maxRdAtomic   outstanding READs/atomics this QP may issue (RTS)
 * @param maxDestRdAtomic outstanding READs/atomics it accepts (RTR)
 */
public record ConnectOptions(int port, int gidIndex, Set<Access> access, int minRnrTimer, int timeout,
                             int retryCount, int rnrRetry, int maxRdAtomic, int maxDestRdAtomic) {

    /** Port 1, automatic GID, remote read/write/atomic allowed, perftest's timers and retries. */
    public static final ConnectOptions DEFAULT = new ConnectOptions(1, -1,
            EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ, Access.REMOTE_ATOMIC),
            12, 14, 7, 7, 1, 1);

    public ConnectOptions {
        access = Set.copyOf(access);
        range(port, 1, 255, "port");
        range(gidIndex, -1, 255, "gidIndex");
        range(minRnrTimer, 0, 31, "minRnrTimer");
        range(timeout, 0, 31, "timeout");
        range(retryCount, 0, 7, "retryCount");
        range(rnrRetry, 0, 7, "rnrRetry");
        range(maxRdAtomic, 0, 255, "maxRdAtomic");
        range(maxDestRdAtomic, 0, 255, "maxDestRdAtomic");
    }

    private static void range(int value, int min, int max, String name) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "], was " + value);
        }
    }

    public ConnectOptions withGidIndex(int index) {
        return new ConnectOptions(port, index, access, minRnrTimer, timeout, retryCount, rnrRetry, maxRdAtomic,
                maxDestRdAtomic);
    }

    public ConnectOptions withAccess(Set<Access> rights) {
        return new ConnectOptions(port, gidIndex, rights, minRnrTimer, timeout, retryCount, rnrRetry, maxRdAtomic,
                maxDestRdAtomic);
    }

    public ConnectOptions withRetries(int timeoutCode, int retries, int rnrRetries) {
        return new ConnectOptions(port, gidIndex, access, minRnrTimer, timeoutCode, retries, rnrRetries,
                maxRdAtomic, maxDestRdAtomic);
    }

    public ConnectOptions withMinRnrTimer(int code) {
        return new ConnectOptions(port, gidIndex, access, code, timeout, retryCount, rnrRetry, maxRdAtomic,
                maxDestRdAtomic);
    }
}
