package io.mooring.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A second {@code mooring} process that serves this one: started with {@code args}, it prints {@code listening on
 * PORT} first; every later line of its output (its log included) is relayed to {@code out} under a {@code name |}
 * prefix. Closing it kills it if it has not ended.
 */
final class ListeningProcess implements AutoCloseable {
    private final Process process;
    private final int port;
    private final CompletableFuture<Void> relay;

    private ListeningProcess(Process process, int port, CompletableFuture<Void> relay) {
        this.process = process;
        this.port = port;
        this.relay = relay;
    }

    /** @throws IOException if the process did not start or said something else first */
    static ListeningProcess start(String name, PrintStream out, String... args) throws IOException {
        Process p = new ProcessBuilder(Main.command(args)).redirectErrorStream(true).start();
        var lines = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String first = lines.readLine();
        if (first == null || !first.startsWith("listening on ")) {
            p.destroyForcibly();
            throw new IOException("the " + name + " process did not start: " + first);
        }
        var relay = CompletableFuture.runAsync(() -> lines.lines().forEach(l -> out.println("  " + name + " | " + l)));
        return new ListeningProcess(p, Integer.parseInt(first.substring("listening on ".length())), relay);
    }

    int port() {
        return port;
    }

    /** Waits for the process to end and its output to be relayed; its exit status, or -1 if it did not end in 30 s. */
    int finish() throws Exception {
        if (!process.waitFor(30, TimeUnit.SECONDS)) return -1;
        relay.get(10, TimeUnit.SECONDS);
        return process.exitValue();
    }

    @Override
    public void close() {
        process.destroyForcibly();
    }
}
