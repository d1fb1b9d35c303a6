package io.mooring.cli;

import io.mooring.examples.kv.KvClient;
import io.mooring.examples.kv.KvServer;
import io.mooring.lifecycle.MooringException;
import io.mooring.verbs.RdmaDevices;
import java.io.IOException;
import java.io.PrintStream;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mooring kv}: the key-value cache example ({@code examples/}, package {@code io.mooring.examples.kv}) as two
 * processes — a server started as a second process and a client (this one) that PUTs and GETs and prints the
 * latencies — or one side of it ({@code --role server|client}).
 */
@Command(name = "kv", description = {"a remote key-value cache: PUT by message, GET by RDMA READ of a leased value.",
        "A server keeps values in arena blocks; a client PUTs by message and GETs by one RDMA READ of the stored value,"
                + " leased to it on its first GET; after --warmup untimed operations (half PUTs: both sides' paths"
                + " compiled, as a pingpong's warm-up does) it prints ops/s and GET/PUT p50/p99. With --concurrency N,"
                + " N tasks call at once over the session; a PUT is answered once the leases of the value it replaced"
                + " were revoked from their readers.",
        "Without --role, a server process and a client (this process) on one machine."})
final class KvCommand extends DeviceCommand {
    /** Which side this process plays. */
    enum Role {
        BOTH, SERVER, CLIENT
    }

    static final class Roles extends OneOf<Role> {
        Roles() {
            super(List.of(Role.values()));
        }
    }


    @Option(names = "--role", paramLabel = "ROLE", defaultValue = "both", converter = Roles.class,
            completionCandidates = Roles.class, description = "${COMPLETION-CANDIDATES}: both sides, or one of them")
    private Role role;
    @Option(names = "--port", paramLabel = "PORT", defaultValue = "0",
            description = "server: the TCP port to listen on (0: any free port; it prints 'listening on PORT')")
    private int port;
    @Option(names = "--sessions", paramLabel = "N", defaultValue = "0",
            description = "server: end after serving N clients (0: serve until killed)")
    private int sessions;
    @Option(names = "--connect", paramLabel = "HOST:PORT", converter = HostPort.class,
            description = "client: the server's address (needed with --role client)")
    private InetSocketAddress connect;
    @Option(names = "--keys", paramLabel = "N", defaultValue = "64", description = "client: distinct keys, 1 to 100000")
    private int keys;
    @Option(names = "--warmup", paramLabel = "N", defaultValue = "20000",
            description = "client: untimed operations first")
    private int warmup;
    @Option(names = "--ops", paramLabel = "N", defaultValue = "20000",
            description = "client: timed operations (90%% GET)")
    private int ops;
    @Option(names = "--concurrency", paramLabel = "N", defaultValue = "1",
            description = "client: tasks (virtual threads) calling at once over the session, 1 to 1024: each GETs any"
                    + " key and PUTs its own, and every GET is checked")
    private int concurrency;
    @Option(names = "--handshake-timeout", paramLabel = "SECONDS", defaultValue = "10",
            description = "how long a session's handshake may take, 1 to 3600 (more on a slow or emulated CPU)")
    private int handshakeSeconds;

    @Override
    public Integer call() throws Exception {
        Usage.within(spec, "--keys", keys, 1, 100_000);
        Usage.within(spec, "--warmup", warmup, 0, 100_000_000);
        Usage.within(spec, "--ops", ops, 1, 100_000_000);
        Usage.within(spec, "--concurrency", concurrency, 1, 1024);
        Usage.within(spec, "--port", port, 0, 65535);
        Usage.within(spec, "--sessions", sessions, 0, 1_000_000);
        Usage.within(spec, "--handshake-timeout", handshakeSeconds, 1, 3600);
        Duration handshakeTimeout = Duration.ofSeconds(handshakeSeconds);
        if (role == Role.CLIENT && connect == null) throw Usage.error(spec, "--role client needs --connect HOST:PORT");
        PrintStream out = out();
        PrintStream err = err();
        RdmaDevices.Choice device;
        try {
            device = RdmaDevices.choose(provider(), null);
        } catch (IllegalArgumentException e) {
            err.println("mooring kv: " + e.getMessage());
            return 1;
        }
        String name = device.name();
        String server = connect == null ? "the server" : connect.getHostString() + ":" + connect.getPort();
        try {
            switch (role) {
                case SERVER -> KvServer.run(name, port, sessions, handshakeTimeout);
                case CLIENT -> KvClient.run(name, server, keys, warmup, ops, concurrency, handshakeTimeout)
                        .forEach(out::println);
                case BOTH -> {
                    return both(device.provider(), name, handshakeTimeout, out, err);
                }
            }
            return 0;
        } catch (BindException e) {
            err.println("mooring kv: cannot listen on TCP port " + port + ": " + e.getMessage());
        } catch (ExecutionException e) { // the only future waited for is the connection's
            err.println("mooring kv: cannot connect to " + server + ": " + e.getCause());
        } catch (IOException | IllegalArgumentException | IllegalStateException | MooringException e) {
            err.println("mooring kv: " + e.getMessage());
        }
        return 1;
    }

    /** Starts a server process for one client, runs the client here, and relays the server's lines. */
    private int both(String provider, String device, Duration handshakeTimeout, PrintStream out, PrintStream err)
            throws Exception {
        try (var server = ListeningProcess.start("server", out, "kv", "--role", "server", "--port", "0",
                "--sessions", "1", "--provider", provider, "--handshake-timeout", String.valueOf(handshakeSeconds))) {
            out.println("kv on " + device + ": " + keys + " keys, " + warmup + " warm-up and " + ops
                    + " timed operations (90% GET, 10% PUT), " + concurrency + " task(s) on one session");
            KvClient.run(device, "127.0.0.1:" + server.port(), keys, warmup, ops, concurrency, handshakeTimeout)
                    .forEach(out::println);
            int status = server.finish();
            if (status < 0) err.println("mooring kv: the server did not finish");
            return status < 0 ? 1 : status;
        }
    }
}
