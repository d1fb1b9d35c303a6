package io.mooring.cli;

import io.mooring.examples.netty.NettyEcho;
import io.mooring.examples.netty.NettyEcho.Transport;
import io.mooring.lifecycle.MooringException;
import io.mooring.verbs.RdmaDevices;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mooring netty-echo}: a plain Netty echo server and client ({@code examples/}, {@link NettyEcho}) on the
 * Mooring transport — the same code as on NIO but for the event loop group and the channel classes — in one process,
 * or two with {@code --listen} / {@code --connect}; {@code --transport nio} runs the very same over TCP sockets.
 */
@Command(name = "netty-echo", description = {"a Netty echo server and client switched to RDMA by changing only the"
        + " event loop group and the channel classes (MooringIoHandler, MooringServerChannel, MooringChannel).",
        "The client sends --size-byte messages one at a time, checks each echo and prints the round trips' p50, p99"
                + " and rate; both sides in this process unless --listen/--connect put them in two."})
final class NettyEchoCommand extends DeviceCommand {
    /** Which Netty transport the echo runs on. */
    enum Kind {
        MOORING, NIO
    }

    static final class Kinds extends OneOf<Kind> {
        Kinds() {
            super(List.of(Kind.values()));
        }
    }

    @Option(names = "--transport", paramLabel = "TRANSPORT", defaultValue = "mooring", converter = Kinds.class,
            completionCandidates = Kinds.class, description = "${COMPLETION-CANDIDATES}: Mooring sessions on the"
            + " --provider's device, or Netty's NIO over TCP (the same application, for comparison)")
    private Kind transport;
    @Option(names = "--size", paramLabel = "BYTES", defaultValue = "64", description = "message size, 1 to 1048576")
    private int size;
    @Option(names = "--iters", paramLabel = "N", defaultValue = "10000", description = "measured round trips")
    private int iters;
    @Option(names = "--warmup", paramLabel = "N", defaultValue = "1000", description = "round trips before measuring")
    private int warmup;
    @Option(names = "--listen", paramLabel = "PORT", description = {"serve the echo on this TCP port (0: any free"
            + " port) for --clients clients; prints 'listening on PORT' first"})
    private Integer listen;
    @Option(names = "--clients", paramLabel = "N", defaultValue = "1",
            description = "with --listen: end after N clients have come and gone (0: serve until killed)")
    private int clients;
    @Option(names = "--connect", paramLabel = "HOST:PORT", converter = HostPort.class,
            description = "ping an echo server started with --listen (on the same --transport)")
    private InetSocketAddress connect;

    @Override
    public Integer call() throws Exception {
        Usage.within(spec, "--size", size, 1, 1 << 20);
        Usage.within(spec, "--iters", iters, 1, 100_000_000);
        Usage.within(spec, "--warmup", warmup, 0, 100_000_000);
        Usage.within(spec, "--clients", clients, 0, 1_000_000);
        if (listen != null) Usage.within(spec, "--listen", listen, 0, 65535);
        if (listen != null && connect != null) {
            throw Usage.error(spec, "--listen and --connect exclude each other: one side listens, the other connects");
        }
        PrintStream out = out();
        try {
            if (listen != null) {
                try (Transport server = open()) {
                    var echo = NettyEcho.serve(server, listen, clients);
                    out.println("listening on " + echo.port());
                    out.println("served " + clients + " client(s) over " + server + ": " + echo.done().get()
                            + " bytes echoed");
                }
            } else if (connect != null) {
                try (Transport client = open()) {
                    ping(client, connect, out);
                }
            } else {
                try (Transport server = open(); Transport client = open()) {
                    var echo = NettyEcho.serve(server, 0, 1);
                    ping(client, new InetSocketAddress("127.0.0.1", echo.port()), out);
                    out.println("server: " + echo.done().get(30, TimeUnit.SECONDS) + " bytes echoed");
                }
            }
            return 0;
        } catch (IOException | ExecutionException | TimeoutException | IllegalArgumentException
                 | IllegalStateException | MooringException e) {
            err().println("mooring netty-echo: " + e.getMessage());
            return 1;
        }
    }

    /** This side's transport: over Mooring, the device the provider chooses. */
    private Transport open() {
        if (transport == Kind.NIO) return Transport.nio();
        return Transport.mooring(RdmaDevices.choose(provider(), null).name());
    }

    private void ping(Transport client, InetSocketAddress server, PrintStream out)
            throws IOException, InterruptedException {
        out.println("netty-echo over " + client + " to " + server.getHostString() + ":" + server.getPort() + ": "
                + size + "-byte messages, " + iters + " round trips after " + warmup + " warm-up");
        out.println(NettyEcho.report(NettyEcho.ping(client, server, size, warmup, iters), size));
    }
}
