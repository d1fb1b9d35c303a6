package io.mooring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * A listening side in a second JVM, the pinging side in this one: the QPs meet over the bootstrap and the soft
 * provider's TCP fabric. The listener sleeps on completion events where the mode has them, so that two spinning
 * JVMs do not fight over a small machine; the poll mode is each side's own choice.
 */
@Timeout(180)
class PingPongTwoProcessTest {
    private static final Pattern LISTENING = Pattern.compile("listening on (\\d+)");

    @ParameterizedTest
    @CsvSource({"send, 1", "send, 8", "write, 4", "write-imm, 4", "read, 8"})
    void twoProcessesPingPongOverTheBootstrap(String mode, int concurrency, @TempDir Path dir) throws Exception {
        Path childErr = dir.resolve("listener.err");
        // The write mode's receiver polls memory (there is no event to sleep on), so its listener spins too.
        String listenerPoll = mode.equals("write") ? "busy" : "events";
        Process child = new ProcessBuilder(Main.command("pingpong", "--listen", "0", "--mode", mode,
                "--poll", listenerPoll, "--concurrency", "" + concurrency, "--iters", "200", "--warmup", "20"))
                .redirectError(childErr.toFile()).start();
        try {
            var childOut = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            String first = childOut.readLine();
            Matcher listening = LISTENING.matcher(first == null ? "" : first);
            assertTrue(listening.matches(), () -> "first line " + first + "; stderr: " + read(childErr));
            CompletableFuture<List<String>> rest = CompletableFuture.supplyAsync(() -> childOut.lines().toList());

            Run client = Run.of("pingpong", "--connect", "127.0.0.1:" + listening.group(1), "--mode", mode, "--poll",
                    "busy", "--concurrency", "" + concurrency, "--iters", "200", "--warmup", "20");
            PingPongTest.assertMeasured(client, 64);
            assertTrue(client.out().contains(", " + concurrency + " in flight per queue pair, "), client::toString);
            if (mode.equals("read")) PingPongTest.assertReadDepth(client, concurrency);
            assertTrue(client.out().contains(", pinging /127.0.0.1:" + listening.group(1) + "\n"), client::toString);

            assertTrue(child.waitFor(60, TimeUnit.SECONDS), "the listener did not exit");
            List<String> childLines = rest.get(10, TimeUnit.SECONDS);
            assertEquals(0, child.exitValue(), () -> childLines + "; stderr: " + read(childErr));
            String verb = mode.equals("read") ? "served" : "answered"; // a READ needs nothing of the listener's CPU
            assertEquals(verb + " 220 round trips", childLines.getLast(), childLines::toString);
            assertEquals("", read(childErr));
        } finally {
            child.destroyForcibly();
        }
    }

    private static String read(Path file) {
        try {
            return Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
