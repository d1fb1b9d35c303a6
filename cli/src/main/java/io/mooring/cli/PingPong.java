package io.mooring.cli;

import io.mooring.lifecycle.DestroyFailedException;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.Bootstrap;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.VerbsException;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.net.BindException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * {@code mooring pingpong}: an RC ping-pong between two queue pairs, in the protocol of {@code ib_send_lat} /
 * {@code ibv_rc_pingpong} (SEND/RECV), of {@code ib_write_lat} (RDMA WRITE, the receiver polling the last byte of its
 * buffer), RDMA WRITE with immediate (a receive completion per message), or of {@code ib_read_lat} (an RDMA READ of
 * the peer's buffer per round trip, the peer's CPU not involved). The pinging side times every round trip and prints
 * percentiles of the half round trip (of the round trip for READ) and the throughput. Both sides run in this process on one device unless
 * {@code --listen}/{@code --connect} put them in two, which exchange their {@link io.mooring.verbs.QpInfo},
 * buffer and settings through a {@link Bootstrap} TCP connection.
 */
final class PingPong {
    static final String USAGE = """
            usage: mooring pingpong [--provider soft|ibv|auto] [--device NAME] [--size BYTES] [--iters N]
                                    [--warmup N] [--mode send|write|write-imm|read] [--poll busy|events]
                                    [--listen PORT | --connect HOST:PORT]
              --provider  soft, ibv or auto (default: mooring.provider, else auto: ibv if it has a device, else soft)
              --device    the device (default: soft0, or the first ibv device)
              --size      message size in bytes (default 64)
              --iters     measured round trips (default 10000)
              --warmup    round trips before measuring (default 1000)
              --mode      send: SEND/RECV (like ib_send_lat); write: RDMA WRITE, the receiver polling the last byte
                          of its buffer (like ib_write_lat); write-imm: RDMA WRITE with immediate, the receiver
                          taking a receive completion; read: RDMA READ of the peer's buffer, waiting for its
                          completion (like ib_read_lat; the peer only serves)
              --poll      busy: spin on the completion queue (default); events: sleep on completion events (not
                          with --mode write, whose receiver polls memory)
              --listen    answer one peer that connects to this TCP port (0: any free port); prints
                          'listening on PORT' first
              --connect   ping a peer started with --listen; both sides need the same --size, --iters, --warmup, --mode
            Without --listen or --connect, both queue pairs run in this process on the chosen device.""";

    private static final int MAX_SIZE = 64 << 20;
    private static final int CONNECT_TIMEOUT_MS = 10_000;
    private static final int BOOTSTRAP_TIMEOUT_MS = (int) PingPongSide.PEER_TIMEOUT.toMillis();

    /** The protocol of a round trip; {@code code} is what the bootstrap sends, fixed whatever the order here. */
    enum Mode {
        /** SEND into a posted receive, as {@code ib_send_lat}. */
        SEND(0, "send"),
        /** RDMA WRITE into the peer's buffer, whose last byte the peer polls, as {@code ib_write_lat}. */
        WRITE(1, "write"),
        /** RDMA WRITE with immediate: the data lands in the buffer and a receive completion says so. */
        WRITE_IMM(2, "write-imm"),
        /** RDMA READ of the peer's buffer, one per round trip, as {@code ib_read_lat}: the peer only serves. */
        READ(3, "read");

        static final List<String> NAMES = Arrays.stream(values()).map(m -> m.option).toList();

        final int code;
        final String option;

        Mode(int code, String option) {
            this.code = code;
            this.option = option;
        }

        static Mode ofOption(String option) {
            return values()[NAMES.indexOf(option)];
        }

        /** The mode the peer named, or null if this side does not know it. */
        static Mode ofCode(int code) {
            return Arrays.stream(values()).filter(m -> m.code == code).findFirst().orElse(null);
        }
    }

    /** What both sides must agree on, and the options that are this side's own business. */
    record Settings(String provider, String device, Mode mode, int size, int iters, int warmup, boolean busyPoll,
                    int listen, InetSocketAddress connect) {
        static final int NO_LISTEN = -1;

        static Settings parse(String[] args) throws UsageException {
            Options o = Options.parse(args, Set.of("provider", "device", "size", "iters", "warmup", "mode", "poll",
                    "listen", "connect"));
            if (o.has("listen") && o.has("connect")) {
                throw new UsageException("--listen and --connect exclude each other: one side listens, the other connects");
            }
            Mode mode = Mode.ofOption(o.choice("mode", "send", Mode.NAMES));
            boolean busyPoll = o.choice("poll", "busy", List.of("busy", "events")).equals("busy");
            if (mode == Mode.WRITE && !busyPoll) {
                throw new UsageException("--mode write polls memory, as ib_write_lat does: it has no completion event"
                        + " to sleep on; use --poll busy, or --mode write-imm");
            }
            return new Settings(o.choice("provider", null, DeviceChoice.PROVIDERS), o.text("device", null), mode,
                    o.number("size", 64, 1, MAX_SIZE), o.number("iters", 10_000, 1, 10_000_000),
                    o.number("warmup", 1000, 0, 100_000_000), busyPoll,
                    o.number("listen", NO_LISTEN, 0, 65535), o.address("connect"));
        }

        int rounds() {
            return warmup + iters;
        }

        String describe() {
            return mode.option + " mode, " + size + "-byte messages, " + iters + " round trips after "
                    + warmup + " warm-up, " + (busyPoll ? "busy" : "event") + " polling";
        }
    }

    /**
     * The application record of the bootstrap: the settings both sides must share, and where the peer writes to.
     */
    private record Setup(Mode mode, int size, int iters, int warmup, long address, int rkey) {
        static final int BYTES = 4 * 4 + 8 + 4;

        static Setup of(Settings s, PingPongSide side) {
            return new Setup(s.mode(), s.size(), s.iters(), s.warmup(), side.receiveAddress(), side.rkey());
        }

        ByteBuffer encode() {
            return ByteBuffer.allocate(BYTES).putInt(mode.code).putInt(size).putInt(iters).putInt(warmup)
                    .putLong(address).putInt(rkey).flip();
        }

        /** @throws IllegalStateException if the peer names a mode this side does not know */
        static Setup decode(ByteBuffer b) {
            int code = b.getInt();
            Mode mode = Mode.ofCode(code);
            if (mode == null) {
                throw new IllegalStateException("the peer runs a pingpong mode this side does not know (" + code + ")");
            }
            return new Setup(mode, b.getInt(), b.getInt(), b.getInt(), b.getLong(), b.getInt());
        }

        String options() {
            return "--mode " + mode.option + " --size " + size + " --iters " + iters + " --warmup " + warmup;
        }
    }

    private final Settings settings;
    private final PrintStream out;

    private PingPong(Settings settings, PrintStream out) {
        this.settings = settings;
        this.out = out;
    }

    static int run(String[] args, PrintStream out, PrintStream err) throws UsageException, InterruptedException {
        Settings settings = Settings.parse(args);
        try {
            new PingPong(settings, out).run();
            return 0;
        } catch (IOException | VerbsException | IllegalArgumentException | IllegalStateException | UncheckedIOException
                 | DestroyFailedException e) {
            err.println("mooring pingpong: " + e.getMessage());
            return 1;
        }
    }

    private void run() throws IOException, InterruptedException {
        DeviceChoice.Choice choice = DeviceChoice.installed()
                .choose(settings.provider(), settings.device());
        // Every handle is closed explicitly: one left to the graph's close could be found unreachable first and
        // reported as a leak by the Cleaner.
        try (Arena arena = Arena.ofShared(); ResourceGraph graph = ResourceGraph.builder().name("pingpong").build();
             DeviceContext context = choice.open(graph)) {
            String device = "device " + choice.name() + " (" + choice.why() + ")";
            if (settings.listen() != Settings.NO_LISTEN) {
                try (var pong = new PingPongSide("pong", context, arena, settings)) {
                    answer(pong, device);
                }
            } else if (settings.connect() != null) {
                try (var ping = new PingPongSide("ping", context, arena, settings)) {
                    ping(ping, device);
                }
            } else {
                try (var ping = new PingPongSide("ping", context, arena, settings);
                     var pong = new PingPongSide("pong", context, arena, settings)) {
                    inProcess(ping, pong, device);
                }
            }
        }
    }

    private void inProcess(PingPongSide ping, PingPongSide pong, String device)
            throws IOException, InterruptedException {
        ping.init();
        pong.init();
        ping.connect(pong.info(), pong.receiveAddress(), pong.rkey());
        pong.connect(ping.info(), ping.receiveAddress(), ping.rkey());
        out.println("pingpong: " + settings.describe());
        out.println(device + ", both queue pairs in this process");
        Timing t = time(settings.mode() == Mode.READ ? ping::read : i -> {
            ping.send(i);
            pong.awaitReceive(i);
            pong.send(i);
            ping.awaitReceive(i);
        });
        ping.drainSends();
        pong.drainSends();
        report(t.rtt(), t.elapsed());
    }

    /** One round trip number {@code i}. */
    @FunctionalInterface
    private interface RoundTrip {
        void run(int i) throws IOException, InterruptedException;
    }

    /** Round-trip times after the warm-up, and the time all of them took. */
    private record Timing(long[] rtt, long elapsed) {}

    /** Runs every round, timing each one after the warm-up. */
    private Timing time(RoundTrip trip) throws IOException, InterruptedException {
        long[] rtt = new long[settings.iters()];
        long start = 0;
        for (int i = 0; i < settings.rounds(); i++) {
            if (i == settings.warmup()) start = System.nanoTime();
            long t0 = System.nanoTime();
            trip.run(i);
            if (i >= settings.warmup()) rtt[i - settings.warmup()] = System.nanoTime() - t0;
        }
        return new Timing(rtt, System.nanoTime() - start);
    }

    /** The listening side: waits for one peer and answers each of its pings. */
    private void answer(PingPongSide pong, String device) throws IOException, InterruptedException {
        Socket accepted;
        try (var server = new ServerSocket()) { // closed once the peer is in: one peer per run
            try {
                server.bind(new InetSocketAddress(settings.listen()));
            } catch (BindException e) {
                throw new BindException("cannot listen on TCP port " + settings.listen() + ": " + e.getMessage());
            }
            out.println("listening on " + server.getLocalPort());
            out.flush(); // the peer (or a script) waits for this line
            accepted = server.accept();
        }
        try (Socket socket = accepted) {
            Bootstrap boot = connected(pong, socket);
            out.println("pingpong: " + settings.describe());
            out.println(device + ", answering " + socket.getRemoteSocketAddress());
            if (settings.mode() == Mode.READ) {
                // The peer's READs need nothing from this side's CPU: wait for its end. A peer that dies closes
                // the socket, so the wait needs no bound (the run may take longer than any fixed one).
                socket.setSoTimeout(0);
            } else {
                for (int i = 0; i < settings.rounds(); i++) {
                    pong.awaitReceive(i);
                    pong.send(i);
                }
                pong.drainSends();
            }
            boot.barrier(); // the peer has its last pong: both QPs may go
            out.println((settings.mode() == Mode.READ ? "served " : "answered ") + settings.rounds() + " round trips");
        }
    }

    /** The connecting side: pings the peer and times each round trip. */
    private void ping(PingPongSide ping, String device) throws IOException, InterruptedException {
        try (Socket socket = dial(settings.connect())) {
            Bootstrap boot = connected(ping, socket);
            out.println("pingpong: " + settings.describe());
            out.println(device + ", pinging " + socket.getRemoteSocketAddress());
            Timing t = time(settings.mode() == Mode.READ ? ping::read : i -> {
                ping.send(i);
                ping.awaitReceive(i);
            });
            ping.drainSends();
            boot.barrier();
            report(t.rtt(), t.elapsed());
        }
    }

    /**
     * Swaps queue pairs and setups with the peer over {@code socket}, refuses a peer with other settings,
     * connects, and waits until the peer has connected too (so that no first message meets a QP not yet in RTR).
     */
    private Bootstrap connected(PingPongSide side, Socket socket) throws IOException {
        socket.setTcpNoDelay(true);
        socket.setSoTimeout(BOOTSTRAP_TIMEOUT_MS);
        Bootstrap boot = Bootstrap.of(socket);
        side.init();
        Setup mine = Setup.of(settings, side);
        Bootstrap.Peer peer = boot.exchange(side.info(), mine.encode());
        Setup theirs = Setup.decode(peer.data());
        if (!theirs.options().equals(mine.options())) {
            throw new IllegalStateException("the peer runs with " + theirs.options() + ", this side with "
                    + mine.options() + ": give both sides the same values");
        }
        side.connect(peer.qp(), theirs.address(), theirs.rkey());
        boot.barrier();
        return boot;
    }

    /** Connects to the listening peer, retrying while it is still starting up. */
    private static Socket dial(InetSocketAddress peer) throws IOException, InterruptedException {
        var address = new InetSocketAddress(peer.getHostString(), peer.getPort());
        if (address.isUnresolved()) throw new IOException("cannot resolve host '" + peer.getHostString() + "'");
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CONNECT_TIMEOUT_MS);
        while (true) {
            var socket = new Socket();
            try {
                socket.connect(address, CONNECT_TIMEOUT_MS);
                return socket;
            } catch (ConnectException e) {
                socket.close();
                if (System.nanoTime() - deadline > 0) {
                    throw new ConnectException("nobody listens on " + address + " (started with --listen "
                            + address.getPort() + "?): " + e.getMessage());
                }
                Thread.sleep(100);
            } catch (IOException e) {
                socket.close();
                throw e;
            }
        }
    }

    /**
     * Prints the percentiles of the round trips {@code rtt} (sorted in place) and the throughput. As perftest does, so
     * that the figures compare: a READ's whole round trip (one operation, as {@code ib_read_lat}), else half of one.
     */
    private void report(long[] rtt, long elapsedNanos) {
        Arrays.sort(rtt);
        boolean read = settings.mode() == Mode.READ;
        double perMicro = read ? 1e3 : 2e3;
        out.println(String.format(Locale.ROOT, "latency (%s, us): p50 %.2f p90 %.2f p99 %.2f p99.9 %.2f max %.2f",
                read ? "round trip" : "half round trip", micros(rtt, 0.50, perMicro), micros(rtt, 0.90, perMicro),
                micros(rtt, 0.99, perMicro), micros(rtt, 0.999, perMicro), rtt[rtt.length - 1] / perMicro));
        double seconds = elapsedNanos / 1e9;
        int bytes = read ? settings.size() : 2 * settings.size();
        out.println(String.format(Locale.ROOT, "throughput: %.0f round trips/s, %.2f MB/s (%d bytes %s per round trip)",
                rtt.length / seconds, (double) bytes * rtt.length / seconds / 1e6, settings.size(),
                read ? "read" : "each way"));
    }

    /** The nearest-rank percentile {@code p} of the sorted round trips, divided by {@code perMicro}. */
    private static double micros(long[] sorted, double p, double perMicro) {
        int rank = (int) Math.ceil(p * sorted.length);
        return sorted[Math.max(rank, 1) - 1] / perMicro;
    }
}
