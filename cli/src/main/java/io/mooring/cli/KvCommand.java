package io.mooring.cli;

import io.mooring.examples.kv.KvClient;
import io.mooring.examples.kv.KvServer;
import io.mooring.lifecycle.MooringException;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.VerbsException;
import java.io.IOException;
import java.io.PrintStream;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;

/**
 * {@code mooring kv}: the key-value cache example ({@code examples/}, package {@code io.mooring.examples.kv}) as two
 * processes — a server started as a second process and a client (this one) that PUTs and GETs and prints the
 * latencies — or one side of it ({@code --role server|client}).
 */
final class KvCommand {
    static final String USAGE = """
            usage: mooring kv [--provider auto|ibv|soft] [--keys N] [--warmup N] [--ops N]
                   mooring kv --role server [--port P] [--sessions N] [--provider ...]
                   mooring kv --role client --connect HOST:PORT [--keys N] [--warmup N] [--ops N] [--provider ...]
              a server keeps values in arena blocks; a client PUTs by message and GETs by one RDMA READ of the
              stored value, leased to it on its first GET; after --warmup untimed operations (default 20000, half
              PUTs: both sides' paths compiled, as a pingpong's warm-up does), prints ops/s and GET/PUT p50/p99""";

    private KvCommand() {}

    static int run(String[] args, PrintStream out, PrintStream err) throws Exception {
        Options o = Options.parse(args, Set.of("provider", "role", "port", "sessions", "connect", "keys", "warmup",
                "ops"));
        String provider = o.choice("provider", RdmaDevices.configuredProvider(), DeviceChoice.PROVIDERS);
        String role = o.choice("role", "both", List.of("both", "server", "client"));
        int keys = o.number("keys", 64, 1, 100_000);
        int warmup = o.number("warmup", 20_000, 0, 100_000_000);
        int ops = o.number("ops", 20_000, 1, 100_000_000);
        int port = o.number("port", 0, 0, 65535);
        int sessions = o.number("sessions", 0, 0, 1_000_000);
        InetSocketAddress connect = o.address("connect");
        if (role.equals("client") && connect == null) throw new UsageException("--role client needs --connect HOST:PORT");
        DeviceChoice.Choice device;
        try {
            device = DeviceChoice.installed().choose(provider, null);
        } catch (IllegalArgumentException e) {
            err.println("mooring kv: " + e.getMessage());
            return 1;
        }
        String name = device.name();
        String server = connect == null ? "the server" : connect.getHostString() + ":" + connect.getPort();
        try {
            switch (role) {
                case "server" -> KvServer.run(name, port, sessions);
                case "client" -> KvClient.run(name, server, keys, warmup, ops).forEach(out::println);
                default -> {
                    return both(device.provider(), name, keys, warmup, ops, out, err);
                }
            }
            return 0;
        } catch (BindException e) {
            err.println("mooring kv: cannot listen on TCP port " + port + ": " + e.getMessage());
        } catch (ExecutionException e) { // the only future waited for is the connection's
            err.println("mooring kv: cannot connect to " + server + ": " + e.getCause());
        } catch (IOException | VerbsException | IllegalArgumentException | IllegalStateException | MooringException e) {
            err.println("mooring kv: " + e.getMessage());
        }
        return 1;
    }

    /** Starts a server process for one client, runs the client here, and relays the server's lines. */
    private static int both(String provider, String device, int keys, int warmup, int ops, PrintStream out,
                            PrintStream err) throws Exception {
        try (var server = ListeningProcess.start("server", out, "kv", "--role", "server", "--port", "0",
                "--sessions", "1", "--provider", provider)) {
            out.println("kv on " + device + ": " + keys + " keys, " + warmup + " warm-up and " + ops
                    + " timed operations (90% GET, 10% PUT)");
            KvClient.run(device, "127.0.0.1:" + server.port(), keys, warmup, ops).forEach(out::println);
            int status = server.finish();
            if (status < 0) err.println("mooring kv: the server did not finish");
            return status < 0 ? 1 : status;
        }
    }
}
