package io.mooring.verbs.soft;

import io.mooring.verbs.PeerLog;
import io.mooring.verbs.QpInfo;
import io.mooring.verbs.values.QpState;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.System.Logger.Level;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * A soft device's port: a TCP listener that accepts the connections of peer QPs, and the dialer that opens
 * them. Each connected QP pair shares one connection: the side with the smaller (LID, QPN) dials when its QP
 * reaches RTR, the other side's listener attaches the connection to the QP named in the handshake.
 */
final class TcpFabric {
    static final String BIND_PROPERTY = "mooring.soft.bind";
    private static final System.Logger LOG = System.getLogger(TcpFabric.class.getName());
    private static final int CONNECT_TIMEOUT_MS = 2_000;
    private static final long DIAL_DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(30);

    private final SoftDevice device;
    private final ServerSocket server;

    private TcpFabric(SoftDevice device, ServerSocket server) {
        this.device = device;
        this.server = server;
        // Virtual: it blocks in accept, which parks a virtual thread without holding a platform thread.
        Thread.ofVirtual().name("soft-fabric-" + device.name).start(this::acceptLoop);
    }

    /**
     * Listens on {@value #BIND_PROPERTY} ({@code host[:port]}, default {@code 127.0.0.1} on an ephemeral port;
     * device {@code i} takes {@code port + i} when a port is given).
     */
    static TcpFabric listen(SoftDevice device, int index) {
        String bind = System.getProperty(BIND_PROPERTY, "127.0.0.1");
        int colon = bind.lastIndexOf(':');
        String host = colon < 0 ? bind : bind.substring(0, colon);
        int port = colon < 0 ? 0 : Integer.parseInt(bind.substring(colon + 1)) + index;
        try {
            var server = new ServerSocket();
            server.bind(new InetSocketAddress(InetAddress.getByName(host), port));
            return new TcpFabric(device, server);
        } catch (IOException e) {
            throw new UncheckedIOException("soft device " + device.name + " cannot listen on " + host + ":" + port
                    + " (-D" + BIND_PROPERTY + "=host[:port] chooses another)", e);
        }
    }

    InetAddress address() {
        return server.getInetAddress();
    }

    int port() {
        return server.getLocalPort();
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            try {
                Socket s = server.accept();
                Thread.ofVirtual().name("soft-accept-" + device.name).start(() -> handshake(s));
            } catch (IOException e) {
                if (!server.isClosed()) LOG.log(Level.WARNING, "soft device " + device.name + ": accept failed", e);
            }
        }
    }

    /**
     * Reads the dialer's hello and hands the connection to the QP it names, if the dialer presents that QP's
     * token. Another token is refused: the one of the QP's previous connection quietly (a late dial of the old
     * peer, started before a reset), any other with a warning (someone on this host tried to act as the peer).
     */
    private void handshake(Socket s) {
        try {
            s.setTcpNoDelay(true);
            s.setSoTimeout(CONNECT_TIMEOUT_MS);
            var hello = TcpLink.Hello.read(new DataInputStream(s.getInputStream()));
            s.setSoTimeout(0);
            SoftQp qp = device.qp(hello.targetQpn());
            if (qp == null) {
                LOG.log(Level.DEBUG, device.name + ": connection for unknown qpn " + hello.targetQpn() + " refused");
                s.close();
                return;
            }
            if (!qp.admits(hello)) {
                PeerLog.log(LOG, qp.isStale(hello) ? Level.DEBUG : Level.WARNING, device.name + ": refused a connection from " + s.getRemoteSocketAddress()
                        + " for qpn " + hello.targetQpn() + " claiming to be qpn " + hello.sourceQpn() + " at "
                        + hello.sourceGid() + " port " + hello.sourceLid() + ": it did not present the QP's token,"
                        + " which only the QP's peer got (with its QpInfo)");
                s.close();
                return;
            }
            TcpLink.start(s, qp, hello.sourceQpn(), device.name, hello);
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.DEBUG, device.name + ": handshake from " + s.getRemoteSocketAddress() + " failed: " + e);
            closeQuietly(s);
        }
    }

    /** At RTR: if this QP is the dialing side of the pair, connects to the peer in the background. */
    void connect(SoftQp qp, QpInfo peer) {
        if (compare(device.lid(), qp.qpNumber(), peer.lid(), peer.qpn()) > 0) return; // the peer dials us
        var hello = new TcpLink.Hello(qp.qpNumber(), peer.qpn(), device.gid(), device.lid(), qp.nextDial(),
                peer.token());
        Thread.ofVirtual().name("soft-dial-" + qp.qpNumber()).start(() -> dial(qp, peer, hello));
    }

    private static int compare(int lid, int qpn, int peerLid, int peerQpn) {
        return lid != peerLid ? Integer.compare(lid, peerLid) : Integer.compare(qpn, peerQpn);
    }

    private void dial(SoftQp qp, QpInfo peer, TcpLink.Hello hello) {
        long deadline = System.nanoTime() + DIAL_DEADLINE_NANOS;
        while (stillWants(qp, peer) && System.nanoTime() < deadline) {
            Socket s = new Socket();
            try {
                s.setTcpNoDelay(true);
                s.connect(new InetSocketAddress(peer.gid().address(), peer.lid()), CONNECT_TIMEOUT_MS);
                hello.write(s.getOutputStream());
                TcpLink.start(s, qp, peer.qpn(), device.name, hello);
                return;
            } catch (IOException e) {
                closeQuietly(s);
                try {
                    Thread.sleep(50);
                } catch (InterruptedException ie) {
                    return;
                }
            }
        }
        if (stillWants(qp, peer)) {
            LOG.log(Level.WARNING, device.name + ": qpn " + qp.qpNumber() + " could not reach its peer qpn "
                    + peer.qpn() + " at " + peer.gid() + " port " + peer.lid() + "; its requests will fail with"
                    + " RETRY_EXC_ERR");
        }
    }

    private static boolean stillWants(SoftQp qp, QpInfo peer) {
        QpState s = qp.state();
        return !qp.isDestroyed() && peer.equals(qp.remote())
                && Arrays.asList(QpState.RTR, QpState.RTS, QpState.SQD).contains(s);
    }

    static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing a broken socket
        }
    }
}
