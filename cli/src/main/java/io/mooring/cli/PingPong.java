package io.mooring.cli;

import io.mooring.lifecycle.MooringException;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.RdmaDevices;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.net.InetSocketAddress;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mooring pingpong}: an RC ping-pong between two queue pairs, in the protocol of {@code ib_send_lat} /
 * {@code ibv_rc_pingpong} (SEND/RECV), of {@code ib_write_lat} (RDMA WRITE, the receiver polling the last byte of its
 * buffer), RDMA WRITE with immediate (a receive completion per message), or of {@code ib_read_lat} (an RDMA READ of
 * the peer's buffer per round trip, the peer's CPU not involved). With {@code --concurrency N} the pinging side keeps
 * N round trips in flight, each in a buffer slot of its own: the raw baseline a session layer's load is measured
 * against. The pinging side times every round trip ({@link RoundTrips}) and prints their percentiles — the whole
 * round trip in every mode — and the throughput. Both sides run in this process on one device unless {@code --listen} /
 * {@code --connect} put them in two ({@link PingPongPeer}).
 */
@Command(name = "pingpong", description = {"RC ping-pong latency and throughput between two queue pairs, in one process"
        + " or two (--listen/--connect), in the protocols of perftest's ib_send_lat, ib_write_lat and ib_read_lat.",
        "Prints the percentiles of the whole round trip (in every mode), the throughput in ops/s (an op is one round"
                + " trip) and how it polls."})
final class PingPong extends DeviceCommand {
    private static final int MAX_SIZE = 64 << 20;
    /** The buffer slots of one direction, {@code --size} × {@code --concurrency}, stay within this. */
    private static final long MAX_SLOTS_BYTES = 256L << 20;
    static final int MAX_CONCURRENCY = 4096;

    /** The protocol of a round trip; its code names it on the bootstrap's wire. */
    enum Mode {
        /** SEND into a posted receive, as {@code ib_send_lat}. */
        SEND(1),
        /** RDMA WRITE into the peer's buffer, whose last byte the peer polls, as {@code ib_write_lat}. */
        WRITE(2),
        /** RDMA WRITE with immediate: the data lands in the buffer and a receive completion says so. */
        WRITE_IMM(3),
        /** RDMA READ of the peer's buffer, one per round trip, as {@code ib_read_lat}: the peer only serves. */
        READ(4);

        final int code;

        Mode(int code) {
            this.code = code;
        }

        /** @throws IllegalStateException if no mode has {@code code} (a peer of another version) */
        static Mode of(int code) {
            for (Mode m : values()) if (m.code == code) return m;
            throw new IllegalStateException("the peer runs a pingpong mode this side does not know (" + code + ")");
        }
    }

    static final class Modes extends OneOf<Mode> {
        Modes() {
            super(List.of(Mode.values()));
        }
    }

    /** How a side waits for a completion. */
    enum Poll {
        /** Spins on the completion queue, as perftest does. */
        BUSY,
        /** Sleeps on completion events, as a Mooring endpoint does by default. */
        EVENTS
    }

    static final class Polls extends OneOf<Poll> {
        Polls() {
            super(List.of(Poll.values()));
        }
    }

    /** What both sides must agree on, and the options that are this side's own business. */
    record Settings(String provider, String device, Mode mode, int size, int concurrency, int iters, int warmup,
                    Poll poll, Integer listen, InetSocketAddress connect) {
        int rounds() {
            return warmup + iters;
        }

        boolean busyPoll() {
            return poll == Poll.BUSY;
        }

        String describe() {
            return OneOf.name(mode) + " mode, " + size + "-byte messages, " + concurrency + " in flight per queue pair, "
                    + iters + " round trips after " + warmup + " warm-up, " + (busyPoll()
                    ? "busy polling (spinning on the completion queue)"
                    : "event polling (sleeping on completion events)");
        }
    }


    @Option(names = "--device", paramLabel = "NAME",
            description = "the device (default: soft0, or the first ibv device)")
    private String device;
    @Option(names = "--mode", paramLabel = "MODE", defaultValue = "send", converter = Modes.class,
            completionCandidates = Modes.class, description = {"${COMPLETION-CANDIDATES}:",
                    "send: SEND/RECV (like ib_send_lat); write: RDMA WRITE, the receiver polling the last byte of its"
                            + " buffer (like ib_write_lat); write-imm: RDMA WRITE with immediate, the receiver taking a"
                            + " receive completion; read: RDMA READ of the peer's buffer, waiting for its completion"
                            + " (like ib_read_lat; the peer only serves)"})
    private Mode mode;
    @Option(names = "--size", paramLabel = "BYTES", defaultValue = "64", description = "message size, 1 to 67108864")
    private int size;
    @Option(names = "--concurrency", paramLabel = "N", defaultValue = "1", description = {"round trips in flight per"
            + " queue pair, 1 to " + MAX_CONCURRENCY + ", each in its own buffer slot (--size × N at most 256 MiB);"
            + " queue depths are sized for N, and for read the READ depth (max_rd_atomic) is negotiated up to N"})
    private int concurrency;
    @Option(names = "--iters", paramLabel = "N", defaultValue = "10000", description = "measured round trips")
    private int iters;
    @Option(names = "--warmup", paramLabel = "N", defaultValue = "1000", description = "round trips before measuring")
    private int warmup;
    @Option(names = "--poll", paramLabel = "POLL", defaultValue = "busy", converter = Polls.class,
            completionCandidates = Polls.class, description = {"${COMPLETION-CANDIDATES}: spin on the completion queue,"
                    + " or sleep on completion events (not with --mode write, whose receiver polls memory)"})
    private Poll poll;
    @Option(names = "--listen", paramLabel = "PORT", description = {"answer one peer that connects to this TCP port"
            + " (0: any free port); prints 'listening on PORT' first"})
    private Integer listen;
    @Option(names = "--connect", paramLabel = "HOST:PORT", converter = HostPort.class, description = {"ping a peer"
            + " started with --listen; both sides need the same --mode, --size, --concurrency, --iters and --warmup"})
    private InetSocketAddress connect;

    @Override
    public Integer call() throws InterruptedException {
        Settings settings = settings();
        try {
            run(settings, out());
            return 0;
        } catch (IOException | MooringException | IllegalArgumentException | IllegalStateException
                 | UncheckedIOException e) {
            err().println("mooring pingpong: " + e.getMessage());
            return 1;
        }
    }

    /** The options, checked. */
    private Settings settings() {
        Usage.within(spec, "--size", size, 1, MAX_SIZE);
        Usage.within(spec, "--concurrency", concurrency, 1, MAX_CONCURRENCY);
        Usage.within(spec, "--iters", iters, 1, 10_000_000);
        Usage.within(spec, "--warmup", warmup, 0, 100_000_000);
        if (listen != null) Usage.within(spec, "--listen", listen, 0, 65535);
        if (listen != null && connect != null) {
            throw Usage.error(spec, "--listen and --connect exclude each other: one side listens, the other connects");
        }
        if ((long) size * concurrency > MAX_SLOTS_BYTES) {
            throw Usage.error(spec, "--size " + size + " × --concurrency " + concurrency + " is more than the "
                    + (MAX_SLOTS_BYTES >> 20) + " MiB of buffer slots a side registers per direction");
        }
        if (mode == Mode.WRITE && poll == Poll.EVENTS) {
            throw Usage.error(spec, "--mode write polls memory, as ib_write_lat does: it has no completion event to"
                    + " sleep on; use --poll busy, or --mode write-imm");
        }
        return new Settings(provider(), device, mode, size, concurrency, iters, warmup, poll, listen, connect);
    }

    private static void run(Settings settings, PrintStream out) throws IOException, InterruptedException {
        RdmaDevices.Choice choice = RdmaDevices.choose(settings.provider(), settings.device());
        // Every handle is closed explicitly: one left to the graph's close could be found unreachable first and
        // reported as a leak by the Cleaner.
        try (Arena arena = Arena.ofShared(); ResourceGraph graph = ResourceGraph.builder().name("pingpong").build();
             DeviceContext context = choice.open(graph)) {
            String device = "device " + choice.name() + " (" + choice.why() + ")";
            if (settings.listen() != null) {
                try (var pong = new PingPongSide("pong", context, arena, settings)) {
                    PingPongPeer.answer(pong, settings, device, out);
                }
            } else if (settings.connect() != null) {
                try (var ping = new PingPongSide("ping", context, arena, settings)) {
                    PingPongPeer.ping(ping, settings, device, out);
                }
            } else {
                try (var ping = new PingPongSide("ping", context, arena, settings);
                     var pong = new PingPongSide("pong", context, arena, settings)) {
                    inProcess(ping, pong, settings, device, out);
                }
            }
        }
    }

    /** Both sides on this thread: the pong side answers each message as the ping side waits for its reply. */
    private static void inProcess(PingPongSide ping, PingPongSide pong, Settings settings, String device,
                                  PrintStream out) throws InterruptedException {
        ping.init();
        pong.init();
        ping.connect(pong.info(), pong.receiveAddress(), pong.rkey(), pong.readDepthAllowed());
        pong.connect(ping.info(), ping.receiveAddress(), ping.rkey(), ping.readDepthAllowed());
        out.println("pingpong: " + settings.describe());
        out.println(device + ", both queue pairs in this process");
        if (settings.mode() == Mode.READ) out.println(ping.readDepth());
        RoundTrips times = RoundTrips.time(settings, ping::post, settings.mode() == Mode.READ ? ping::await : i -> {
            pong.await(i);
            pong.post(i);
            ping.await(i);
        });
        ping.drainSends();
        pong.drainSends();
        times.report(settings, out);
    }
}
