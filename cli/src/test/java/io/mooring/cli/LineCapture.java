package io.mooring.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Collects what a command running on another thread prints; {@link #port()} waits for its listening line. */
final class LineCapture {
    private static final Pattern LISTENING = Pattern.compile("\\Alistening on (\\d+)\n");

    private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    private final PrintStream stream = new PrintStream(bytes, true, StandardCharsets.UTF_8);

    PrintStream stream() {
        return stream;
    }

    /** The port of the first line, {@code listening on PORT}, once it is printed. */
    int port() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            Matcher m = LISTENING.matcher(toString());
            if (m.find()) return Integer.parseInt(m.group(1));
            Thread.sleep(10);
        }
        throw new AssertionError("no 'listening on PORT' first line within 60 s; printed:\n" + this);
    }

    @Override
    public String toString() {
        return bytes.toString(StandardCharsets.UTF_8);
    }
}
