package io.mooring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@code mooring kv}: a server process and this one as the client, every GET checked against the last PUT. */
class KvCommandTest {

    @Test
    void theCacheServesAClientInAnotherProcessAndLeaksNothing() throws Exception {
        var bytes = new ByteArrayOutputStream();
        var out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        int status = Main.run(new String[] {"kv", "--provider", "soft", "--keys", "16", "--warmup", "500", "--ops", "2000",
                "--handshake-timeout", "30"}, out,
                System.err);
        String text = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(0, status, text);
        assertTrue(text.contains("500 warm-up and 2000 timed operations"), text);
        assertTrue(text.contains("2000 ops in"), text);
        assertTrue(text.contains("every GET returned the last PUT"), text);
        assertTrue(text.matches("(?s).*client: GET p50 [0-9.]+ µs, p99 [0-9.]+ µs.*"), text);
        assertTrue(text.contains("server | server: 1 client(s) served, 0 live blocks"), text);
    }

    /**
     * Eight tasks call at once over the session: every GET is checked (never older than the last PUT completed before
     * it, never torn), and PUTs replace values the client holds leases of — revoked, the session kept.
     */
    @Test
    void tasksCallAtOnceAndPutsRevokeTheLeasesTheyHold() throws Exception {
        Run run = Run.of("kv", "--provider", "soft", "--keys", "16", "--warmup", "500", "--ops", "4000",
                "--concurrency", "8", "--handshake-timeout", "30");
        assertEquals(0, run.status(), run::toString);
        assertTrue(run.out().contains("500 warm-up and 4000 timed operations (90% GET, 10% PUT), 8 task(s)"),
                run::toString);
        assertTrue(run.out().contains("4000 ops in"), run::toString);
        assertTrue(run.out().contains("every GET returned the last PUT completed before it, or a later one"),
                run::toString);
        var revoked = Pattern.compile("client: 8 tasks, (\\d+) leases revoked by PUTs while held, 0 stale or torn GETs,"
                + " session kept").matcher(run.out());
        assertTrue(revoked.find() && Long.parseLong(revoked.group(1)) > 0, run::toString);
        assertTrue(run.out().matches("(?s).*server \\| server: leases revoked by PUTs p50 [0-9.]+ µs, p99 [0-9.]+ µs"
                + " \\([1-9][0-9]*\\); 0 session\\(s\\) lost.*"), run::toString);
        assertTrue(run.out().contains("server | server: 1 client(s) served, 0 live blocks"), run::toString);
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "--role client --connect host:abc | Invalid value for option '--connect': 'host:abc' needs a port from 1 to 65535, not 'abc'",
        "--role client --connect host:0   | Invalid value for option '--connect': 'host:0' needs a port from 1 to 65535, not '0'",
        "--role client --connect 5000     | Invalid value for option '--connect': '5000' is not HOST:PORT",
        "--role proxy                     | Invalid value for option '--role': 'proxy' is not one of both, server, client",
        "--keys 0                         | Invalid value for option '--keys': 0 is not from 1 to 100000",
        "--concurrency 0                  | Invalid value for option '--concurrency': 0 is not from 1 to 1024",
        "--handshake-timeout 0            | Invalid value for option '--handshake-timeout': 0 is not from 1 to 3600"})
    void aBadServerAddressIsAUsageError(String args, String message) throws Exception {
        Run run = Run.of(("kv " + args.strip()).split(" +"));
        assertEquals(2, run.status(), run::toString);
        assertTrue(run.err().startsWith("mooring kv: " + message + "\n"), run::toString);
    }

    /** What the network refuses ends the command with one line naming it, no stack trace. */
    @Test
    void aServerNobodyRunsOrAPortInUseIsAOneLineError() throws Exception {
        int port;
        try (var taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = taken.getLocalPort();
            Run server = Run.of("kv", "--role", "server", "--provider", "soft", "--port", "" + port);
            assertEquals(1, server.status(), server::toString);
            assertTrue(server.err().matches("mooring kv: cannot listen on TCP port " + port + ": .+\n"), server::toString);
        }
        Run client = Run.of("kv", "--role", "client", "--provider", "soft", "--connect", "127.0.0.1:" + port);
        assertEquals(1, client.status(), client::toString); // nobody listens there now
        assertTrue(client.err().matches("mooring kv: cannot connect to 127.0.0.1:" + port + ": .+\n"), client::toString);
    }

    @Test
    void helpNamesEveryOptionWithItsDefault() throws Exception {
        Run run = Run.of("kv", "--help");
        assertEquals(0, run.status(), run::toString);
        PingPongTest.assertOptions(run.out(), Map.of("--provider=PROVIDER", "(default: the mooring.provider property",
                "--role=ROLE", "Default: both", "--port=PORT", "Default: 0", "--sessions=N", "Default: 0",
                "--connect=HOST:PORT", "needed with --role client", "--keys=N", "Default: 64",
                "--warmup=N", "Default: 20000", "--ops=N", "(90% GET) Default: 20000", "--concurrency=N", "Default: 1",
                "--handshake-timeout=SECONDS", "Default: 10"));
    }

    @Test
    void aClientWithoutAServerAddressIsAUsageError() throws Exception {
        var err = new ByteArrayOutputStream();
        int status = Main.run(new String[] {"kv", "--role", "client"}, System.out,
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(2, status);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("--role client needs --connect HOST:PORT"));
    }
}
