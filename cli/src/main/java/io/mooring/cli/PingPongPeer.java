package io.mooring.cli;

import io.mooring.verbs.Bootstrap;
import java.io.IOException;
import java.io.PrintStream;
import java.net.BindException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

/**
 * A pingpong between two processes: the side started with {@code --listen} answers, the one with {@code --connect}
 * pings; they exchange their {@link io.mooring.verbs.QpInfo}, buffer and settings through a {@link Bootstrap} TCP
 * connection, and refuse each other if the settings they must share differ.
 */
final class PingPongPeer {
    private static final int CONNECT_TIMEOUT_MS = 10_000;
    private static final int BOOTSTRAP_TIMEOUT_MS = (int) PingPongSide.PEER_TIMEOUT.toMillis();

    private PingPongPeer() {}

    /**
     * The application record of the bootstrap: the settings both sides must share, the READ depth this side's device
     * allows, and where the peer writes to (or reads from).
     */
    private record Setup(PingPong.Mode mode, int size, int concurrency, int iters, int warmup, int readDepth,
                         long address, int rkey) {
        static final int BYTES = 6 * 4 + 8 + 4;

        static Setup of(PingPong.Settings s, PingPongSide side) {
            return new Setup(s.mode(), s.size(), s.concurrency(), s.iters(), s.warmup(), side.readDepthAllowed(),
                    side.receiveAddress(), side.rkey());
        }

        ByteBuffer encode() {
            return ByteBuffer.allocate(BYTES).putInt(mode.code).putInt(size).putInt(concurrency).putInt(iters)
                    .putInt(warmup).putInt(readDepth).putLong(address).putInt(rkey).flip();
        }

        /** @throws IllegalStateException if the peer names a mode this side does not know */
        static Setup decode(ByteBuffer b) {
            return new Setup(PingPong.Mode.of(b.getInt()), b.getInt(), b.getInt(), b.getInt(), b.getInt(), b.getInt(),
                    b.getLong(), b.getInt());
        }

        String options() {
            return "--mode " + OneOf.name(mode) + " --size " + size + " --concurrency " + concurrency
                    + " --iters " + iters + " --warmup " + warmup;
        }
    }

    /** The listening side: waits for one peer and answers each of its pings. */
    static void answer(PingPongSide pong, PingPong.Settings settings, String device, PrintStream out)
            throws IOException, InterruptedException {
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
            Bootstrap boot = connected(pong, settings, socket);
            out.println("pingpong: " + settings.describe());
            out.println(device + ", answering " + socket.getRemoteSocketAddress());
            boolean read = settings.mode() == PingPong.Mode.READ;
            if (read) out.println(pong.readDepth());
            if (read) {
                // The peer's READs need nothing from this side's CPU: wait for its end. A peer that dies closes
                // the socket, so the wait needs no bound (the run may take longer than any fixed one).
                socket.setSoTimeout(0);
            } else {
                for (int i = 0; i < settings.rounds(); i++) {
                    pong.await(i);
                    pong.post(i);
                }
                pong.drainSends();
            }
            boot.barrier(); // the peer has its last pong: both QPs may go
            out.println((read ? "served " : "answered ") + settings.rounds() + " round trips");
        }
    }

    /** The connecting side: pings the peer and times each round trip. */
    static void ping(PingPongSide ping, PingPong.Settings settings, String device, PrintStream out)
            throws IOException, InterruptedException {
        try (Socket socket = dial(settings.connect())) {
            Bootstrap boot = connected(ping, settings, socket);
            out.println("pingpong: " + settings.describe());
            out.println(device + ", pinging " + socket.getRemoteSocketAddress());
            if (settings.mode() == PingPong.Mode.READ) out.println(ping.readDepth());
            RoundTrips times = RoundTrips.time(settings, ping::post, ping::await);
            ping.drainSends();
            boot.barrier();
            times.report(settings, out);
        }
    }

    /**
     * Swaps queue pairs and setups with the peer over {@code socket}, refuses a peer with other settings,
     * connects, and waits until the peer has connected too (so that no first message meets a QP not yet in RTR).
     */
    private static Bootstrap connected(PingPongSide side, PingPong.Settings settings, Socket socket)
            throws IOException {
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
        side.connect(peer.qp(), theirs.address(), theirs.rkey(), theirs.readDepth());
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
}
