package io.mooring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The pipeline of {@link RoundTrips}: N round trips in flight, each ended in order and timed once. */
class RoundTripsTest {

    @ParameterizedTest
    @CsvSource({"1, 10, 5", "8, 100, 30", "8, 5, 0", "16, 3, 2"})
    void keepsExactlyNInFlightAndEndsEachInOrder(int n, int iters, int warmup) throws Exception {
        var settings = new PingPong.Settings("soft", null, PingPong.Mode.SEND, 64, n, iters, warmup,
                PingPong.Poll.BUSY, null, null);
        int rounds = iters + warmup;
        int[] started = {0};
        int[] ended = {0};
        int[] most = {0};
        RoundTrips times = RoundTrips.time(settings, seq -> {
            assertEquals(started[0]++, seq, "started in order");
            assertTrue(started[0] - ended[0] <= n, "at most N in flight");
        }, seq -> {
            assertEquals(ended[0], seq, "ended in order");
            most[0] = Math.max(most[0], started[0] - ended[0]);
            assertTrue(seq < started[0], "ended only once started");
            ended[0]++;
        });
        assertEquals(rounds, started[0]);
        assertEquals(rounds, ended[0]);
        assertEquals(Math.min(n, rounds), most[0], "the pipeline is filled to N");

        var bytes = new ByteArrayOutputStream();
        times.report(settings, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        String report = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(report.startsWith("latency (round trip, µs): p50 "), report);
        assertTrue(report.contains("\nthroughput: "), report);
        assertTrue(report.endsWith(" MB/s (an op is one round trip: 64 bytes each way)\n"), report);
    }
}
