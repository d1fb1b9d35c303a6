package io.mooring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The README's main job, end to end: an owner process and this one as the requester. */
class DemoTest {

    @Test
    void theWholeStoryRunsAndNothingLeaks() throws Exception {
        var bytes = new ByteArrayOutputStream();
        var out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        // The demo logs its leak and session ends on purpose; keep them out of the build output.
        var root = java.util.logging.Logger.getLogger("");
        var handlers = root.getHandlers();
        for (var h : handlers) root.removeHandler(h);
        int status;
        try {
            status = Main.run(new String[] {"demo", "--provider", "soft"}, out, System.err);
        } finally {
            for (var h : handlers) root.addHandler(h);
        }
        String text = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(0, status, text);
        assertTrue(text.contains("read them back: identical"), text);
        assertTrue(text.contains("RELEASE acknowledged; the segment refuses use: refused"), text);
        assertTrue(text.contains("1 dropped segment released by the Cleaner"), text);
        assertTrue(text.contains("straight on the QP: REM_ACCESS_ERR"), text);
        assertTrue(text.contains(": the late write never landed"), text);
        assertTrue(text.contains("owner | arena: 0 live blocks"), text);
        assertTrue(text.contains("owner | resource graph: 0 live"), text);
        assertTrue(text.endsWith("demo complete: every lease ended, every block returned, nothing leaked\n"), text);
    }
}
