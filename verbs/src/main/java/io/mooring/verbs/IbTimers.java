package io.mooring.verbs;

import java.time.Duration;

/**
 * The two timers of a connection as the verbs encode them, 5-bit codes, and the {@link Duration}s users give instead
 * ({@link ConnectOptions}): a duration becomes the code of the shortest timer at least as long, so a connection never
 * gives up sooner than asked.
 */
final class IbTimers {
    /** The local ACK timeout of code {@code n} (1–31): 4.096 µs × 2^n. Code 0 (wait forever) is not offered. */
    private static final long ACK_UNIT_NANOS = 4096;
    /** The RNR delays of codes 0–31 in units of 10 µs, as InfiniBand encodes them: code 0 is the longest. */
    private static final int[] RNR_UNITS = {65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
            512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};
    private static final long RNR_UNIT_NANOS = 10_000;

    private IbTimers() {}

    /**
     * The ACK timeout code for at least {@code timeout}.
     *
     * @throws IllegalArgumentException if it is not positive or above the longest, 4.096 µs × 2^31 (about 2.4 hours)
     */
    static int ackTimeoutCode(Duration timeout) {
        long nanos = positiveNanos(timeout, "ackTimeout");
        for (int code = 1; code <= 31; code++) {
            if (ackTimeout(code).toNanos() >= nanos) return code;
        }
        throw new IllegalArgumentException("ackTimeout " + timeout + " exceeds the longest, " + ackTimeout(31));
    }

    static Duration ackTimeout(int code) {
        return Duration.ofNanos(ACK_UNIT_NANOS << code);
    }

    /**
     * The RNR timer code for at least {@code delay}.
     *
     * @throws IllegalArgumentException if it is not positive or above the longest, 655.36 ms
     */
    static int rnrTimerCode(Duration delay) {
        long nanos = positiveNanos(delay, "minRnrTimer");
        for (int code = 1; code <= 31; code++) {
            if (rnrTimer(code).toNanos() >= nanos) return code;
        }
        if (rnrTimer(0).toNanos() >= nanos) return 0;
        throw new IllegalArgumentException("minRnrTimer " + delay + " exceeds the longest, " + rnrTimer(0));
    }

    static Duration rnrTimer(int code) {
        return Duration.ofNanos(RNR_UNITS[code] * RNR_UNIT_NANOS);
    }

    private static long positiveNanos(Duration d, String name) {
        if (d.isNegative() || d.isZero()) throw new IllegalArgumentException(name + " must be positive, was " + d);
        return d.compareTo(Duration.ofDays(1)) > 0 ? Long.MAX_VALUE : d.toNanos();
    }
}
