package io.mooring.cli;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.Locale;

/**
 * The round trips of a pingpong, up to {@code --concurrency} of them in flight: each timed from its start to its end
 * once the warm-up is over, and the time the measured ones took together. With N in flight a round trip starts as soon
 * as the one N before it has ended, in the same buffer slot.
 */
final class RoundTrips {
    /** One side's part of round trip number {@code seq}. */
    @FunctionalInterface
    interface Step {
        void run(int seq) throws InterruptedException;
    }

    private final long[] nanos;
    private final long elapsedNanos;

    private RoundTrips(long[] nanos, long elapsedNanos) {
        this.nanos = nanos;
        this.elapsedNanos = elapsedNanos;
    }

    /**
     * Runs every round of {@code settings}: starts the first N with {@code start}, then ends each in order with
     * {@code finish} and starts the one N later in its place.
     */
    static RoundTrips time(PingPong.Settings settings, Step start, Step finish) throws InterruptedException {
        int inFlight = settings.concurrency();
        int rounds = settings.rounds();
        int warmup = settings.warmup();
        long[] startedAt = new long[inFlight];
        long[] nanos = new long[settings.iters()];
        long measuring = System.nanoTime(); // from the end of the warm-up: its last round trip's end
        for (int i = 0; i < Math.min(inFlight, rounds); i++) {
            startedAt[i] = System.nanoTime();
            start.run(i);
        }
        for (int i = 0; i < rounds; i++) {
            finish.run(i);
            long now = System.nanoTime();
            int slot = i % inFlight;
            if (i >= warmup) nanos[i - warmup] = now - startedAt[slot];
            if (i == warmup - 1) measuring = now;
            if (i + inFlight < rounds) {
                startedAt[slot] = System.nanoTime();
                start.run(i + inFlight);
            }
        }
        return new RoundTrips(nanos, System.nanoTime() - measuring);
    }

    /**
     * Prints the percentiles of the whole round trip — in every mode, so that they compare across modes (perftest
     * prints half of one for {@code ib_send_lat} and {@code ib_write_lat}) — and the throughput.
     */
    void report(PingPong.Settings settings, PrintStream out) {
        long[] sorted = nanos.clone();
        Arrays.sort(sorted);
        out.println(String.format(Locale.ROOT,
                "latency (round trip, µs): p50 %.2f p90 %.2f p99 %.2f p99.9 %.2f max %.2f", micros(sorted, 0.50), micros(sorted, 0.90), micros(sorted, 0.99), micros(sorted, 0.999),
                sorted[sorted.length - 1] / 1e3));
        double seconds = elapsedNanos / 1e9;
        boolean read = settings.mode() == PingPong.Mode.READ;
        int bytes = read ? settings.size() : 2 * settings.size();
        out.println(String.format(Locale.ROOT, "throughput: %.0f ops/s, %.2f MB/s (an op is one round trip: %s)",
                sorted.length / seconds, (double) bytes * sorted.length / seconds / 1e6,
                read ? "a " + settings.size() + "-byte READ" : settings.size() + " bytes each way"));
    }

    /** The nearest-rank percentile {@code p} of the sorted round trips, in µs. */
    private static double micros(long[] sorted, double p) {
        int rank = (int) Math.ceil(p * sorted.length);
        return sorted[Math.max(rank, 1) - 1] / 1e3;
    }
}
