package io.mooring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** {@code mooring kv}: a server process and this one as the client, every GET checked against the last PUT. */
class KvCommandTest {

    @Test
    void theCacheServesAClientInAnotherProcessAndLeaksNothing() throws Exception {
        var bytes = new ByteArrayOutputStream();
        var out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        int status = Main.run(new String[] {"kv", "--provider", "soft", "--keys", "16", "--warmup", "500", "--ops", "2000"}, out,
                System.err);
        String text = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(0, status, text);
        assertTrue(text.contains("500 warm-up and 2000 timed operations"), text);
        assertTrue(text.contains("2000 ops in"), text);
        assertTrue(text.contains("every GET returned the last PUT"), text);
        assertTrue(text.matches("(?s).*client: GET p50 [0-9.]+ µs, p99 [0-9.]+ µs.*"), text);
        assertTrue(text.contains("server | server: 1 client(s) served, 0 live blocks"), text);
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
