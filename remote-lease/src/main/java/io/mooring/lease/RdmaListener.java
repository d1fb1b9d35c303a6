package io.mooring.lease;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Accepts peers for an {@link RdmaEndpoint} (async-rdma's {@code RdmaListener}). A virtual thread accepts
 * connections; each handshake runs on a virtual thread of its own, so one silent peer stalls only itself. Sessions
 * that completed their handshake wait for {@link #accept()} in a queue of at most {@link #BACKLOG}: past it — the
 * application does not take them — new sessions are closed at once instead of piling up. While the endpoint's
 * handshake limit is reached, the listener accepts no connection (they wait in the kernel's backlog, bounded by it) until
 * a handshake ends — each ends within the handshake timeout, so silent peers delay others at most that long and cost
 * nothing that stays. A connection from a peer still barred after a lost session is closed without a handshake.
 */
public final class RdmaListener implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RdmaListener.class.getName());
    /** Sessions ready and not yet accepted, and accept() calls waiting, at most. */
    public static final int BACKLOG = 64;

    private final RdmaEndpoint endpoint;
    private final ServerSocket server;
    private final Thread acceptor;
    private final Handoff<RdmaSession> ready = new Handoff<>(BACKLOG, "a session", Acceptance::new, () -> { });
    private final AtomicLong refused = new AtomicLong();

    RdmaListener(RdmaEndpoint endpoint, ServerSocket server) {
        this.endpoint = endpoint;
        this.server = server;
        this.acceptor = Thread.ofVirtual().name("mooring-listener-" + server.getLocalPort()).unstarted(this::acceptLoop);
    }

    void start() {
        acceptor.start();
    }

    /** Where peers connect: the bound address and port. */
    public InetSocketAddress address() {
        return (InetSocketAddress) server.getLocalSocketAddress();
    }

    /**
     * The next peer's session, once its handshake is done. A timed {@code get} on the future that runs out gives up
     * its place (the future is cancelled), so polling {@code accept().get(timeout)} loses no session to an abandoned
     * poll; a caller that stops waiting otherwise cancels the future.
     *
     * @throws FlowControlException if {@value #BACKLOG} calls already wait
     */
    public CompletableFuture<RdmaSession> accept() {
        return ready.take();
    }

    /**
     * The future of an {@link #accept()} made before its session: a timed get that runs out cancels it, so the next
     * session goes to a caller still waiting, and the abandoned poll does not count against {@link #BACKLOG}.
     */
    private static final class Acceptance extends CompletableFuture<RdmaSession> {
        @Override
        public RdmaSession get(long timeout, TimeUnit unit)
                throws InterruptedException, ExecutionException, TimeoutException {
            try {
                return super.get(timeout, unit);
            } catch (TimeoutException e) {
                if (cancel(false)) throw e;
            } catch (InterruptedException e) {
                if (cancel(false)) throw e;
                Thread.currentThread().interrupt();
            }
            return super.get(); // completed meanwhile: the session is this caller's
        }

        @Override
        public <U> CompletableFuture<U> newIncompleteFuture() {
            return new CompletableFuture<>();
        }
    }

    /** Connections closed without a session: barred, failed handshakes, or past the backlog. */
    public long refused() {
        return refused.get();
    }

    private void acceptLoop() {
        while (!server.isClosed()) {
            Socket socket;
            try {
                socket = server.accept();
            } catch (IOException e) {
                if (!server.isClosed()) LOG.log(Level.WARNING, "accepting on " + address() + " failed", e);
                continue;
            }
            long barred = endpoint.admission().barredForNanos(socket.getInetAddress()); // makes no account: a bare connect costs none
            if (barred > 0) {
                refuse(socket, "its last session was lost; barred for " + barred / 1_000_000 + " ms more");
            } else if (!endpoint.admission().startHandshake()) {
                refuse(socket, "the endpoint is closing");
            } else {
                Thread.ofVirtual().name("mooring-handshake-" + socket.getRemoteSocketAddress()).start(() -> {
                    try {
                        offer(endpoint.admission().handshake(socket, null));
                    } catch (IOException | RuntimeException e) {
                        refuse(socket, "its handshake failed: " + e.getMessage());
                    } finally {
                        endpoint.admission().handshakeDone();
                    }
                });
            }
        }
    }

    private void refuse(Socket socket, String why) {
        refused.incrementAndGet();
        LOG.log(Level.INFO, "refused " + socket.getRemoteSocketAddress() + " on " + address() + ": " + why);
        SessionLink.closeQuietly(socket);
    }

    private void offer(RdmaSession session) {
        if (ready.offer(session)) return;
        refused.incrementAndGet(); // closed, or the application takes no sessions: do not pile them up
        LOG.log(Level.WARNING, "closing the session to " + session.peerAddress() + ": the listener is closed or "
                + BACKLOG + " sessions wait for accept()");
        session.close();
    }

    /** Stops accepting; sessions not yet taken by {@link #accept()} are closed, waiting calls fail. */
    @Override
    public void close() {
        List<RdmaSession> untaken = ready.close(new IllegalStateException("the listener is closed"));
        try {
            server.close();
        } catch (IOException e) {
            LOG.log(Level.DEBUG, "closing the listener socket: " + e.getMessage());
        }
        acceptor.interrupt(); // it may wait for a handshake slot
        try {
            acceptor.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        untaken.forEach(RdmaSession::close);
        endpoint.listenerClosed(this);
    }
}
