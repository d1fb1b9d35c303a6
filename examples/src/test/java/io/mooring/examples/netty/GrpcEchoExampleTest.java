package io.mooring.examples.netty;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.testing.ChildJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The gRPC example runs as a user runs it, in a JVM of its own on the class path: it echoes, times, leaves nothing. */
@Timeout(value = 5, unit = TimeUnit.MINUTES) // a backstop: the wait below is bounded on its own
class GrpcEchoExampleTest {
    private static final String FIGURE = "gRPC unary, 100 calls each: Mooring \\(soft:soft0\\) p50 [0-9.]+ us,"
            + " p99 [0-9.]+ us; NIO \\(loopback\\) p50 [0-9.]+ us, p99 [0-9.]+ us; p50 ratio [0-9.]+";

    @Test
    void theExampleEchoesOverMooringAndTimesBothTransports(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("out.txt");
        Path err = dir.resolve("err.txt");
        Process example = new ProcessBuilder(ChildJvm.command(List.of("--enable-native-access=ALL-UNNAMED",
                "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), GrpcEchoExample.class, "100"))
                .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        try {
            assertTrue(example.waitFor(180, TimeUnit.SECONDS), "the example did not exit");
        } finally {
            example.destroyForcibly();
        }
        String stderr = Files.readString(err);
        assertEquals(0, example.exitValue(), stderr);
        List<String> lines = Files.readAllLines(out);
        assertEquals(3, lines.size(), () -> lines + stderr);
        assertEquals("echoed over Mooring: hello over RDMA", lines.get(0));
        assertTrue(lines.get(1).matches(FIGURE), lines.get(1));
        assertEquals("done: 0 live blocks, 0 live resources", lines.get(2));
        assertFalse(stderr.contains("WARNING"), stderr);
    }
}
