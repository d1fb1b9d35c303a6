package io.mooring.lease;

import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.PeerLog;
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
 * connections and never waits on a peer; each connection is admitted or refused on a virtual thread of its own
 * ({@link Admission}: it must send its first bytes within the first-bytes timeout before it holds any slot, so silent
 * connections delay no one and are closed within that timeout). A refused peer is told why. Sessions that completed
 * their handshake wait for {@link #acceptAsync()} in a queue of at most {@link #BACKLOG}: past it — the application does not
 * take them — new sessions are closed at once instead of piling up.
 */
public final class RdmaListener implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RdmaListener.class.getName());
    /** Sessions ready and not yet accepted, and acceptAsync() calls waiting, at most. */
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
     * its place (the future is cancelled), so polling {@code acceptAsync().get(timeout)} loses no session to an abandoned
     * poll; a caller that stops waiting otherwise cancels the future.
     *
     * @throws FlowControlException if {@value #BACKLOG} calls already wait
     */
    public CompletableFuture<RdmaSession> acceptAsync() {
        return ready.take();
    }

    /**
     * The future of an {@link #acceptAsync()} made before its session: a timed get that runs out cancels it, so the next
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
            endpoint.admission().accepted(socket, this::refused, this::offer);
        }
    }

    /** A connection closed without a session; peers trigger these at will, so the log line is rate-limited. */
    private void refused(Socket socket, String why) {
        refused.incrementAndGet();
        PeerLog.log(LOG, Level.INFO, "refused " + socket.getRemoteSocketAddress() + " on " + address() + ": " + why);
    }

    private void offer(RdmaSession session) {
        if (ready.offer(session)) return;
        refused.incrementAndGet(); // closed, or the application takes no sessions: do not pile them up
        PeerLog.log(LOG, Level.WARNING, "closing the session to " + session.peerAddress()
                + ": the listener is closed or " + BACKLOG + " sessions wait for acceptAsync()");
        session.close();
    }

    /**
     * Stops accepting; sessions not yet taken by {@link #acceptAsync()} are closed; waiting calls, and those made
     * after, fail with {@link ResourceClosedException}.
     */
    @Override
    public void close() {
        var closed = new ResourceClosedException("the listener on " + address() + " is closed");
        List<RdmaSession> untaken = ready.close(closed);
        try {
            server.close();
        } catch (IOException e) {
            LOG.log(Level.DEBUG, "closing the listener socket: " + e.getMessage());
        }
        try {
            acceptor.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        untaken.forEach(RdmaSession::close);
        endpoint.listenerClosed(this);
    }
}
