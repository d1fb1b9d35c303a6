package io.mooring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

@Timeout(120)
class PingPongTest {
    private static final Pattern LATENCY = Pattern.compile("(?m)^latency \\((?:half )?round trip, us\\): p50 ([\\d.]+)"
            + " p90 ([\\d.]+) p99 ([\\d.]+) p99\\.9 ([\\d.]+) max ([\\d.]+)$");
    private static final Pattern THROUGHPUT = Pattern.compile(
            "(?m)^throughput: (\\d+) round trips/s, ([\\d.]+) MB/s \\((\\d+) bytes (?:each way|read) per round trip\\)$");

    /** Checks the result lines: five ordered positive percentiles and a positive throughput of the given size. */
    static void assertMeasured(Run run, int size) {
        assertEquals(0, run.status(), run::toString);
        Matcher latency = LATENCY.matcher(run.out());
        assertTrue(latency.find(), run::toString);
        double previous = 0;
        for (int i = 1; i <= 5; i++) {
            double v = Double.parseDouble(latency.group(i));
            assertTrue(v > 0 && v >= previous, "percentiles must be positive and ordered: " + latency.group());
            previous = v;
        }
        Matcher throughput = THROUGHPUT.matcher(run.out());
        assertTrue(throughput.find(), run::toString);
        assertTrue(Long.parseLong(throughput.group(1)) > 0, throughput.group());
        assertTrue(Double.parseDouble(throughput.group(2)) > 0, throughput.group());
        assertEquals(size, Integer.parseInt(throughput.group(3)));
    }

    @ParameterizedTest
    @CsvSource({"send, busy, 64", "write, busy, 64", "write, busy, 1", "write-imm, busy, 64", "send, events, 4096",
        "write-imm, events, 1", "read, busy, 64", "read, events, 4096"})
    void oneProcessPingPongPrintsPercentilesAndThroughput(String mode, String poll, int size) throws Exception {
        Run run = Run.of("pingpong", "--provider", "soft", "--mode", mode, "--poll", poll, "--size", "" + size,
                "--iters", "300", "--warmup", "30");
        assertMeasured(run, size);
        assertEquals("", run.err(), run::toString);
        String[] lines = run.out().split("\n");
        assertEquals(4, lines.length, run::toString);
        assertEquals("pingpong: " + mode + " mode, " + size + "-byte messages, 300 round trips after 30 warm-up, "
                + (poll.equals("busy") ? "busy" : "event") + " polling", lines[0]);
        assertEquals("device soft:soft0 (--provider soft), both queue pairs in this process", lines[1]);
        // as perftest: ib_read_lat times a READ's whole round trip, the others half of one
        assertTrue(lines[2].startsWith(mode.equals("read") ? "latency (round trip, us)" : "latency (half round trip, us)"),
                lines[2]);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "--frobnicate 1          | unknown option '--frobnicate'",
        "--size 0                | --size must be a whole number from 1 to 67108864, not '0'",
        "--iters many            | --iters must be a whole number from 1 to 10000000, not 'many'",
        "--mode fetch            | --mode must be one of send, write, write-imm, read, not 'fetch'",
        "--mode write --poll events | --mode write polls memory, as ib_write_lat does: it has no completion event",
        "--poll                  | --poll needs a value",
        "--size 8 --size 16      | --size is given twice",
        "64                      | unexpected argument '64'",
        "--listen 0 --connect h:1 | --listen and --connect exclude each other",
        "--listen 70000          | --listen must be a whole number from 0 to 65535, not '70000'",
        "--connect 18515         | --connect needs HOST:PORT, not '18515'",
        "--connect host:0        | --connect needs a port from 1 to 65535, not '0'"})
    void badArgumentsPrintUsageAndExit2(String args, String message) throws Exception {
        String[] argv = ("pingpong " + args.strip()).split(" +");
        Run run = Run.of(argv);
        assertEquals(2, run.status(), run::toString);
        assertTrue(run.err().startsWith("mooring pingpong: " + message), run::toString);
        assertTrue(run.err().contains("usage: mooring pingpong [--provider soft|ibv|auto]"), run::toString);
        assertEquals("", run.out());
    }

    @Test
    void helpPrintsTheUsage() throws Exception {
        Run run = Run.of("pingpong", "--help");
        assertEquals(0, run.status(), run::toString);
        assertEquals(PingPong.USAGE + "\n", run.out());
    }

    @Test
    void aDeviceThatCannotBeHadIsAClearFailure() throws Exception {
        var listing = DeviceChoice.installed().list("ibv");
        org.junit.jupiter.api.Assumptions.assumeTrue(listing.devices().isEmpty(), "this host has RDMA devices");
        Run ibv = Run.of("pingpong", "--provider", "ibv");
        assertEquals(1, ibv.status(), ibv::toString);
        assertEquals("mooring pingpong: --provider ibv, but ibv shows no devices: " + listing.whyNone()
                + "; use --provider soft\n", ibv.err());

        Run missing = Run.of("pingpong", "--device", "soft7");
        assertEquals(1, missing.status(), missing::toString);
        assertTrue(missing.err().startsWith("mooring pingpong: no RDMA device named 'soft7'"), missing::toString);
    }

    @Test
    void peersWithDifferentSettingsRefuseEachOther() throws Exception {
        try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            var listenerOut = new LineCapture();
            Future<Integer> listener = pool.submit(() -> Main.run(new String[] {"pingpong", "--listen", "0",
                "--size", "64"}, listenerOut.stream(), listenerOut.stream()));
            int port = listenerOut.port();
            Run client = Run.of("pingpong", "--connect", "127.0.0.1:" + port, "--size", "128");
            assertEquals(1, client.status(), client::toString);
            assertTrue(client.err().startsWith("mooring pingpong: the peer runs with --mode send --size 64 --iters 10000"
                    + " --warmup 1000, this side with --mode send --size 128 --iters 10000 --warmup 1000: give both"
                    + " sides the same values"), client::toString);
            assertEquals(1, listener.get(60, TimeUnit.SECONDS), listenerOut::toString);
            assertTrue(listenerOut.toString().contains("mooring pingpong: the peer runs with --mode send --size 128"),
                    listenerOut::toString);
        }
    }
}
