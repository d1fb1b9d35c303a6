package io.mooring.lease;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Accepts peers for an {@link RdmaEndpoint} (async-rdma's {@code RdmaListener}). A virtual thread accepts
 * connections; each handshake runs on a virtual thread of its own, so one silent peer stalls only itself. Sessions
 * that completed their handshake wait for {@link #accept()} in a queue of at most {@link #BACKLOG}: past it — the
 * application does not take them — new sessions are closed at once instead of piling up. Connections beyond the
 * endpoint's handshake limit, or from a peer still barred after a lost session, are closed without a handshake.
 */
public final class RdmaListener implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(RdmaListener.class.getName());
    /** Sessions ready and not yet accepted, and accept() calls waiting, at most. */
    public static final int BACKLOG = 64;

    private final RdmaEndpoint endpoint;
    private final ServerSocket server;
    private final Thread acceptor;
    private final ArrayDeque<RdmaSession> ready = new ArrayDeque<>();                      // guarded by this
    private final ArrayDeque<CompletableFuture<RdmaSession>> takers = new ArrayDeque<>(); // guarded by this
    private boolean closed;                                                              // guarded by this
    private long refused;                                                                // guarded by this

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

    /** The next peer's session, once its handshake is done. */
    public CompletableFuture<RdmaSession> accept() {
        synchronized (this) {
            if (closed) return CompletableFuture.failedFuture(new IllegalStateException("the listener is closed"));
            RdmaSession s = ready.poll();
            if (s != null) return CompletableFuture.completedFuture(s);
            takers.removeIf(CompletableFuture::isDone);
            if (takers.size() >= BACKLOG) {
                throw new FlowControlException(BACKLOG + " accept() calls already wait on " + address());
            }
            var f = new CompletableFuture<RdmaSession>();
            takers.add(f);
            return f;
        }
    }

    /** Connections closed without a session: over the handshake limit, barred, failed, or past the backlog. */
    public synchronized long refused() {
        return refused;
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
            long barred = endpoint.account(socket.getInetAddress()).barredForNanos();
            if (barred > 0) {
                refuse(socket, "its last session was lost; barred for " + barred / 1_000_000 + " ms more");
            } else if (!endpoint.tryStartHandshake()) {
                refuse(socket, "too many handshakes in progress");
            } else {
                Thread.ofVirtual().name("mooring-handshake-" + socket.getRemoteSocketAddress()).start(() -> {
                    try {
                        offer(endpoint.handshake(socket));
                    } catch (IOException | RuntimeException e) {
                        refuse(socket, "its handshake failed: " + e.getMessage());
                    } finally {
                        endpoint.handshakeDone();
                    }
                });
            }
        }
    }

    private void refuse(Socket socket, String why) {
        synchronized (this) {
            refused++;
        }
        LOG.log(Level.INFO, "refused " + socket.getRemoteSocketAddress() + " on " + address() + ": " + why);
        RdmaSession.closeQuietly(socket);
    }

    private void offer(RdmaSession session) {
        while (true) {
            CompletableFuture<RdmaSession> taker;
            synchronized (this) {
                if (!closed && takers.isEmpty() && ready.size() < BACKLOG) {
                    ready.add(session);
                    return;
                }
                taker = closed ? null : takers.poll();
                if (taker == null) refused++;
            }
            if (taker == null) { // closed, or the application takes no sessions: do not pile them up
                LOG.log(Level.WARNING, "closing the session to " + session.peerAddress() + ": "
                        + (closed() ? "the listener is closed" : BACKLOG + " sessions wait for accept()"));
                session.close();
                return;
            }
            if (taker.complete(session)) return;
        }
    }

    private synchronized boolean closed() {
        return closed;
    }

    /** Stops accepting; sessions not yet taken by {@link #accept()} are closed, waiting calls fail. */
    @Override
    public void close() {
        List<RdmaSession> untaken;
        List<CompletableFuture<RdmaSession>> waiting;
        synchronized (this) {
            if (closed) return;
            closed = true;
            untaken = new ArrayList<>(ready);
            waiting = new ArrayList<>(takers);
            ready.clear();
            takers.clear();
        }
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
        waiting.forEach(f -> f.completeExceptionally(new IllegalStateException("the listener closed")));
        endpoint.listenerClosed(this);
    }
}
