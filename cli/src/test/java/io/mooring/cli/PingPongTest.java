package io.mooring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.verbs.RdmaDevices;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
    private static final Pattern LATENCY = Pattern.compile("(?m)^latency \\(round trip, µs\\): p50 ([\\d.]+)"
            + " p90 ([\\d.]+) p99 ([\\d.]+) p99\\.9 ([\\d.]+) max ([\\d.]+)$");
    private static final Pattern THROUGHPUT = Pattern.compile("(?m)^throughput: (\\d+) ops/s, ([\\d.]+) MB/s"
            + " \\(an op is one round trip: (?:a (\\d+)-byte READ|(\\d+) bytes each way)\\)$");
    private static final Pattern READ_DEPTH = Pattern.compile("(?m)^READ depth: (\\d+) outstanding per queue pair"
            + " \\(--concurrency (\\d+); this device allows (\\d+), the peer's (\\d+)\\)$");

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
        long ops = Long.parseLong(throughput.group(1));
        assertTrue(ops > 0, throughput.group());
        boolean read = throughput.group(3) != null;
        assertEquals(size, Integer.parseInt(read ? throughput.group(3) : throughput.group(4)));
        // MB/s is ops/s times the bytes of a round trip, printed to 0.01 (1-byte ones on a slow host print 0.00)
        double expected = ops * (read ? size : 2.0 * size) / 1e6;
        assertEquals(expected, Double.parseDouble(throughput.group(2)), 0.005 + expected * 1e-3, throughput.group());
    }

    /** The READ depth line of a read run: the depth negotiated for {@code concurrency} on the soft device. */
    static void assertReadDepth(Run run, int concurrency) {
        Matcher depth = READ_DEPTH.matcher(run.out());
        assertTrue(depth.find(), run::toString);
        int allowed = Integer.parseInt(depth.group(3));
        assertEquals(Math.min(concurrency, allowed), Integer.parseInt(depth.group(1)), depth.group());
        assertEquals(concurrency, Integer.parseInt(depth.group(2)), depth.group());
        assertEquals(allowed, Integer.parseInt(depth.group(4)), depth.group());
    }

    @ParameterizedTest
    @CsvSource({"send, busy, 64, 1", "write, busy, 64, 1", "write, busy, 1, 1", "write-imm, busy, 64, 1",
        "send, events, 4096, 1", "write-imm, events, 1, 1", "read, busy, 64, 1", "read, events, 4096, 1",
        "send, busy, 64, 8", "write, busy, 64, 8", "write-imm, events, 64, 8", "read, busy, 64, 8", "read, events, 1, 8",
        "read, busy, 8, 200"})
    void oneProcessPingPongPrintsPercentilesAndThroughput(String mode, String poll, int size, int concurrency)
            throws Exception {
        Run run = Run.of("pingpong", "--provider", "soft", "--mode", mode, "--poll", poll, "--size", "" + size,
                "--concurrency", "" + concurrency, "--iters", "300", "--warmup", "30");
        assertMeasured(run, size);
        assertEquals("", run.err(), run::toString);
        List<String> lines = List.of(run.out().split("\n"));
        boolean read = mode.equals("read");
        assertEquals(read ? 5 : 4, lines.size(), run::toString);
        assertEquals("pingpong: " + mode + " mode, " + size + "-byte messages, " + concurrency + " in flight per queue"
                + " pair, 300 round trips after 30 warm-up, " + (poll.equals("busy")
                ? "busy polling (spinning on the completion queue)" : "event polling (sleeping on completion events)"),
                lines.get(0));
        assertEquals("device soft:soft0 (provider soft), both queue pairs in this process", lines.get(1));
        if (read) assertReadDepth(run, concurrency); // 200 is more than soft allows: it is capped
        assertTrue(lines.get(read ? 3 : 2).startsWith("latency (round trip, µs)"), run::toString);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "--frobnicate 1             | Unknown options: '--frobnicate', '1'",
        "--size 0                   | Invalid value for option '--size': 0 is not from 1 to 67108864",
        "--concurrency 0            | Invalid value for option '--concurrency': 0 is not from 1 to 4096",
        "--concurrency 5000         | Invalid value for option '--concurrency': 5000 is not from 1 to 4096",
        "--size 1048576 --concurrency 512 | --size 1048576 × --concurrency 512 is more than the 256 MiB",
        "--iters many               | Invalid value for option '--iters': 'many' is not an int",
        "--mode fetch               | Invalid value for option '--mode': 'fetch' is not one of send, write, write-imm, read",
        "--poll sometimes           | Invalid value for option '--poll': 'sometimes' is not one of busy, events",
        "--provider rdma            | Invalid value for option '--provider': 'rdma' is not one of soft, ibv, auto",
        "--mode write --poll events | --mode write polls memory, as ib_write_lat does: it has no completion event",
        "--poll                     | Missing required parameter for option '--poll' (POLL)",
        "--size 8 --size 16         | option '--size' (BYTES) should be specified only once",
        "64                         | Unmatched argument at index 1: '64'",
        "--listen 0 --connect h:1   | --listen and --connect exclude each other",
        "--listen 70000             | Invalid value for option '--listen': 70000 is not from 0 to 65535",
        "--connect 18515            | Invalid value for option '--connect': '18515' is not HOST:PORT",
        "--connect host:0           | Invalid value for option '--connect': 'host:0' needs a port from 1 to 65535, not '0'"})
    void badArgumentsPrintOneLineAndTheUsageAndExit2(String args, String message) throws Exception {
        String[] argv = ("pingpong " + args.strip()).split(" +");
        Run run = Run.of(argv);
        assertEquals(2, run.status(), run::toString);
        assertTrue(run.err().startsWith("mooring pingpong: " + message), run::toString);
        assertTrue(run.err().contains("\nUsage: mooring pingpong [-h]"), run::toString);
        assertEquals("", run.out());
    }

    @Test
    void helpNamesEveryOptionWithItsDefault() throws Exception {
        Run run = Run.of("pingpong", "--help");
        assertEquals(0, run.status(), run::toString);
        assertEquals("", run.err());
        String help = run.out();
        assertTrue(help.startsWith("Usage: mooring pingpong [-h] "), help);
        assertOptions(help, Map.of("--provider=PROVIDER", "soft, ibv, auto (default: the mooring.provider property",
                "--device=NAME", "(default: soft0, or the first ibv device)",
                "--mode=MODE", "Default: send", "--size=BYTES", "Default: 64", "--concurrency=N", "Default: 1",
                "--iters=N", "Default: 10000", "--warmup=N", "Default: 1000", "--poll=POLL", "Default: busy",
                "--listen=PORT", "(0: any free port)", "--connect=HOST:PORT", "ping a peer started with --listen"));
        assertTrue(help.contains("send, write, write-imm, read:"), help);
        assertEquals(help, Run.of("help", "pingpong").out(), "mooring help pingpong prints the same");
    }

    /**
     * Checks that {@code help} lists each option of {@code expected} (and {@code -h, --help}) and no other, each
     * with the text expected in its description: its default, where it has one.
     */
    static void assertOptions(String help, Map<String, String> expected) {
        Matcher option = Pattern.compile("(?m)^ +(-h, )?(--\\S+)\\s+(.*(\\n {20,}\\S.*)*)").matcher(help);
        Map<String, String> found = new HashMap<>();
        while (option.find()) found.put(option.group(2), option.group(3).replaceAll("\\s+", " "));
        assertEquals("prints this help and exits", found.remove("--help"), help);
        assertEquals(expected.keySet(), found.keySet(), help);
        expected.forEach((name, text) -> assertTrue(found.get(name).contains(text), name + ": " + found.get(name)));
    }

    @Test
    void aDeviceThatCannotBeHadIsAClearFailure() throws Exception {
        var listing = RdmaDevices.listing("ibv");
        org.junit.jupiter.api.Assumptions.assumeTrue(listing.devices().isEmpty(), "this host has RDMA devices");
        Run ibv = Run.of("pingpong", "--provider", "ibv");
        assertEquals(1, ibv.status(), ibv::toString);
        assertEquals("mooring pingpong: provider ibv, but ibv shows no devices: " + listing.whyNone()
                + "; choose provider soft\n", ibv.err());

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
            assertTrue(client.err().startsWith("mooring pingpong: the peer runs with --mode send --size 64 --concurrency 1"
                    + " --iters 10000 --warmup 1000, this side with --mode send --size 128 --concurrency 1 --iters 10000"
                    + " --warmup 1000: give both sides the same values"), client::toString);
            assertEquals(1, listener.get(60, TimeUnit.SECONDS), listenerOut::toString);
            assertTrue(listenerOut.toString().contains("mooring pingpong: the peer runs with --mode send --size 128"),
                    listenerOut::toString);
        }
    }

    /** A peer that is no Mooring pingpong (an HTTP server, say): one clear line naming what it sent, status 1. */
    @Test
    void aPeerThatSpeaksAnotherProtocolIsAClearFailure() throws Exception {
        try (var server = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
             ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            pool.submit(() -> {
                try (var peer = server.accept()) {
                    peer.getOutputStream().write("HTTP/1.1 400 Bad Request\r\n\r\n".getBytes());
                    peer.getInputStream().readAllBytes(); // until the client hangs up
                }
                return null;
            });
            Run client = Run.of("pingpong", "--connect", "127.0.0.1:" + server.getLocalPort());
            assertEquals(1, client.status(), client::toString);
            assertEquals("mooring pingpong: the peer is not a Mooring bootstrap: magic 0x48545450, expected 0x4d4f4f52"
                    + " (\"MOOR\")\n", client.err());
        }
    }
}
