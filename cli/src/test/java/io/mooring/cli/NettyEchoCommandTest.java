package io.mooring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@code mooring netty-echo}: Netty's echo on the Mooring transport, a server process ({@code --listen}) and this one
 * as the client ({@code --connect}), every echo checked byte for byte by the client; and the same in one process.
 */
@Timeout(180)
class NettyEchoCommandTest {
    private static final Pattern LISTENING = Pattern.compile("listening on (\\d+)");
    private static final String MEASURED = "(?s).*\\d+ round trips of %d bytes: p50 [0-9.]+ µs, p99 [0-9.]+ µs,"
            + " \\d+ round trips/s\n.*";

    @ParameterizedTest
    @CsvSource({"64, 300", "20000, 50"})
    void aServerProcessEchoesEveryMessageOfAClientInAnother(int size, int iters) throws Exception {
        Process server = new ProcessBuilder(Main.command("netty-echo", "--provider", "soft", "--listen", "0"))
                .redirectErrorStream(true).start();
        try {
            var lines = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            String first = lines.readLine();
            Matcher listening = LISTENING.matcher(first == null ? "" : first);
            assertTrue(listening.matches(), () -> "first line " + first);
            CompletableFuture<List<String>> rest = CompletableFuture.supplyAsync(() -> lines.lines().toList());

            Run client = Run.of("netty-echo", "--provider", "soft", "--connect", "127.0.0.1:" + listening.group(1),
                    "--size", "" + size, "--iters", "" + iters, "--warmup", "20");
            assertEquals(0, client.status(), client::toString);
            assertTrue(client.out().startsWith("netty-echo over Mooring (soft:"), client::toString);
            assertTrue(client.out().contains(size + "-byte messages, " + iters + " round trips after 20 warm-up"),
                    client::toString);
            assertTrue(client.out().matches(MEASURED.formatted(size)), client::toString);
            assertEquals("", client.err());

            assertTrue(server.waitFor(60, TimeUnit.SECONDS), "the server did not end after its client");
            List<String> serverLines = rest.get(10, TimeUnit.SECONDS);
            assertEquals(0, server.exitValue(), serverLines::toString);
            long bytes = (long) size * (iters + 20);
            String served = "served 1 client\\(s\\) over Mooring \\(soft:.*\\): " + bytes + " bytes echoed";
            assertTrue(serverLines.stream().anyMatch(l -> l.matches(served)), serverLines::toString); // beside its log
        } finally {
            server.destroyForcibly();
        }
    }

    @Test
    void bothSidesInOneProcessOverEitherTransport() throws Exception {
        for (String transport : List.of("mooring", "nio")) {
            Run run = Run.of("netty-echo", "--provider", "soft", "--transport", transport, "--iters", "200",
                    "--warmup", "20");
            assertEquals(0, run.status(), run::toString);
            assertTrue(run.out().startsWith("netty-echo over " + (transport.equals("nio") ? "NIO (TCP)"
                    : "Mooring (soft:")), run::toString);
            assertTrue(run.out().matches(MEASURED.formatted(64)), run::toString);
            assertTrue(run.out().endsWith("server: " + 64 * 220 + " bytes echoed\n"), run::toString);
        }
    }

    @Test
    void aServerNobodyRunsIsAOneLineError() throws Exception {
        int port;
        try (var free = new ServerSocket(0)) {
            port = free.getLocalPort();
        }
        Run client = Run.of("netty-echo", "--provider", "soft", "--connect", "127.0.0.1:" + port);
        assertEquals(1, client.status(), client::toString);
        assertTrue(client.err().matches("mooring netty-echo: .+\n"), client::toString);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "--size 0                 | Invalid value for option '--size': 0 is not from 1 to 1048576",
        "--transport tcp          | Invalid value for option '--transport': 'tcp' is not one of mooring, nio",
        "--listen 0 --connect h:1 | --listen and --connect exclude each other"})
    void aBadOptionIsAUsageError(String args, String message) throws Exception {
        Run run = Run.of(("netty-echo " + args.strip()).split(" +"));
        assertEquals(2, run.status(), run::toString);
        assertTrue(run.err().startsWith("mooring netty-echo: " + message), run::toString);
    }
}
