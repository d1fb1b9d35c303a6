package io.mooring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code mooring pagestore}: a crowd against a page server in another process, every delivered page checked. */
@Timeout(180)
class PageStoreCommandTest {
    @Test
    void aCrowdOverTwoSessionsReadsAndWritesAServerInAnotherProcess() throws Exception {
        var relayed = new ByteArrayOutputStream();
        try (var server = ListeningProcess.start("server", new PrintStream(relayed, true, StandardCharsets.UTF_8),
                "pagestore", "--listen", "0", "--sessions", "2", "--provider", "soft")) {
            Run client = Run.of("pagestore", "--connect", "127.0.0.1:" + server.port(), "--sessions", "2",
                    "--concurrency", "8", "--warmup", "40", "--ops", "400", "--write-percent", "20", "--provider", "soft");
            assertEquals(0, client.status(), client::toString);
            assertTrue(client.out().contains("8 task(s) over 2 session(s), 40 warm-up and 400 timed operations, 20% writes"),
                    client::toString);
            assertTrue(client.out().matches("(?s).*client: 8 tasks over 2 session\\(s\\): \\d+ READs and \\d+ writes in"
                    + " [0-9.]+ s, \\d+ reads/s\n.*"), client::toString);
            assertTrue(client.out().contains("delivered: 0 stale, 0 wrong"), client::toString);
            assertEquals(0, server.finish());
        }
        String server = relayed.toString(StandardCharsets.UTF_8);
        assertTrue(server.contains("server | server: 2 session(s) served, 0 live blocks"), server);
    }

    @Test
    void listenAndConnectExcludeEachOther() throws Exception {
        Run run = Run.of("pagestore", "--listen", "0", "--connect", "127.0.0.1:1");
        assertEquals(2, run.status(), run::toString);
        assertTrue(run.err().startsWith("mooring pagestore: --listen and --connect exclude each other"), run::toString);
    }
}
