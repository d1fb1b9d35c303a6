package io.mooring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

class LifecycleDemoTest {

    @Test
    void theDemoTearsDownInOrderAndEndsWithNothingLive() throws Exception {
        List<LogRecord> logged = new CopyOnWriteArrayList<>();
        Logger lifecycleLog = Logger.getLogger("io.mooring.lifecycle");
        Handler capture = new Handler() {
            @Override public void publish(LogRecord r) { logged.add(r); }
            @Override public void flush() {}
            @Override public void close() {}
        };
        lifecycleLog.addHandler(capture);
        lifecycleLog.setUseParentHandlers(false);
        String out;
        int status;
        try {
            var bytes = new ByteArrayOutputStream();
            status = Main.run(new String[] {"lifecycle-demo"}, new PrintStream(bytes, true, StandardCharsets.UTF_8),
                    System.err);
            out = bytes.toString(StandardCharsets.UTF_8);
        } finally {
            lifecycleLog.removeHandler(capture);
            lifecycleLog.setUseParentHandlers(true);
        }

        assertEquals(0, status, out);
        assertTrue(out.contains("pd is CLOSING, mr is OPEN"), out);
        assertTrue(out.contains("mr is CLOSING with 1 pin"), out);
        assertTrue(out.contains("(policy STRICT): 1 live child: mr#"), out);
        assertTrue(out.contains("qp is FAILED, pd is CLOSING"), out);
        assertTrue(out.indexOf("destroyed qp#5") < out.indexOf("destroyed pd#2"), out);
        assertTrue(out.contains("leak: comp-channel#6 was dropped without close()"), out);
        assertTrue(out.indexOf("destroyed cq#3") < out.indexOf("destroyed context#1"), out);
        assertTrue(out.endsWith("all resources destroyed, in order, exactly once\n"), out);
        assertEquals(1, logged.stream().filter(r -> r.getLevel() == Level.SEVERE).count(),
                "the failed QP destroy is reported once");
    }
}
