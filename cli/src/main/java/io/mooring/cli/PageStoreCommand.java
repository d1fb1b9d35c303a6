package io.mooring.cli;

import io.mooring.examples.pagestore.PageClient;
import io.mooring.examples.pagestore.PageServer;
import io.mooring.examples.pagestore.PageStore;
import io.mooring.examples.pagestore.Pages;
import io.mooring.lifecycle.MooringException;
import io.mooring.verbs.RdmaDevices;
import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.concurrent.ExecutionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mooring pagestore}: the page-store example ({@code examples/}, package {@code io.mooring.examples.pagestore})
 * as a crowd harness — N tasks over S sessions READing pages through an offer of the whole table and writing them by
 * request/reply — in one process, or as a server ({@code --listen}) and a client ({@code --connect}) in two. Its
 * figures compare with {@code mooring pingpong --concurrency N}.
 */
@Command(name = "pagestore", description = {"a remote page store under a crowd: READs of "
        + Pages.COUNT + " pages of " + Pages.BYTES + " bytes through one read-only offer, writes by request/reply.",
        "Every READ is checked (checksum, then the body against its seed and the last confirmed write); it prints"
                + " reads/s, READ and write p50/p99, torn READs read again and stale or wrong pages delivered (0).",
        "Without --listen/--connect, server and client in this process."})
final class PageStoreCommand extends DeviceCommand {
    @Option(names = "--concurrency", paramLabel = "N", defaultValue = "1",
            description = "client: tasks (virtual threads), 1 to 4096, task t on session t mod S")
    private int concurrency;
    @Option(names = "--sessions", paramLabel = "S", defaultValue = "1",
            description = "sessions to the server, 1 to 64 (with --listen: serve S sessions, then end)")
    private int sessions;
    @Option(names = "--ops", paramLabel = "N", defaultValue = "20000", description = "client: timed operations")
    private int ops;
    @Option(names = "--warmup", paramLabel = "N", defaultValue = "2000",
            description = "client: untimed operations first")
    private int warmup;
    @Option(names = "--write-percent", paramLabel = "P", defaultValue = "10",
            description = "client: the share of operations that write, 0 to 100")
    private int writePercent;
    @Option(names = "--listen", paramLabel = "PORT", description = {"serve --sessions sessions on this TCP port"
            + " (0: any free port); prints 'listening on PORT' first"})
    private Integer listen;
    @Option(names = "--connect", paramLabel = "HOST:PORT", converter = HostPort.class,
            description = "run the client against a server started with --listen")
    private InetSocketAddress connect;

    @Override
    public Integer call() throws Exception {
        Usage.within(spec, "--concurrency", concurrency, 1, PingPong.MAX_CONCURRENCY);
        Usage.within(spec, "--sessions", sessions, 1, 64);
        Usage.within(spec, "--ops", ops, 1, 100_000_000);
        Usage.within(spec, "--warmup", warmup, 0, 100_000_000);
        Usage.within(spec, "--write-percent", writePercent, 0, 100);
        if (listen != null) Usage.within(spec, "--listen", listen, 0, 65535);
        if (listen != null && connect != null) {
            throw Usage.error(spec, "--listen and --connect exclude each other: one side listens, the other connects");
        }
        String device;
        try {
            device = RdmaDevices.choose(provider(), null).name();
        } catch (IllegalArgumentException e) {
            err().println("mooring pagestore: " + e.getMessage());
            return 1;
        }
        try {
            if (listen != null) {
                PageServer.run(device, listen, sessions);
            } else {
                out().println("pagestore on " + device + ": " + concurrency + " task(s) over " + sessions
                        + " session(s), " + warmup + " warm-up and " + ops + " timed operations, " + writePercent
                        + "% writes; completions by events");
                (connect != null ? PageClient.run(device, resolved(), sessions, concurrency, warmup, ops, writePercent)
                        : PageStore.inProcess(device, sessions, concurrency, warmup, ops, writePercent))
                        .forEach(out()::println);
            }
            return 0;
        } catch (BindException e) {
            err().println("mooring pagestore: cannot listen on TCP port " + listen + ": " + e.getMessage());
        } catch (ExecutionException e) {
            err().println("mooring pagestore: cannot connect to " + connect.getHostString() + ":" + connect.getPort()
                    + ": " + e.getCause());
        } catch (IOException | MooringException | IllegalArgumentException | IllegalStateException e) {
            err().println("mooring pagestore: " + e.getMessage());
        }
        return 1;
    }

    /** The server's address, looked up now (an unknown host fails here, naming it). */
    private InetSocketAddress resolved() throws UnknownHostException {
        var address = new InetSocketAddress(connect.getHostString(), connect.getPort());
        if (address.isUnresolved()) throw new UnknownHostException("unknown host " + connect.getHostString());
        return address;
    }
}
