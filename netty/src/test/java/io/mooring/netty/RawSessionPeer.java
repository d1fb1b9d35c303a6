package io.mooring.netty;

import io.mooring.allocator.Block;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A blocking peer of a Mooring channel over a bare {@link RdmaSession}, speaking the transport's stream as it is on the
 * wire: each message is bytes of the stream, an empty one its end. What a {@code java.net.Socket} is to Netty's socket
 * tests — a peer that is no Netty channel — with a session in place of the socket.
 */
final class RawSessionPeer implements AutoCloseable {
    private static final Duration WAIT = Duration.ofSeconds(10);

    private final RdmaEndpoint endpoint;
    private RdmaSession session;
    private InboundMessage reading; // the message read() takes bytes from
    private int readAt;

    RawSessionPeer(RdmaEndpoint endpoint) {
        this.endpoint = endpoint;
    }

    void connect(SocketAddress address) throws IOException {
        try {
            session = endpoint.connectAsync((InetSocketAddress) address).get(WAIT.toSeconds(), TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException | InterruptedException e) {
            throw new IOException("connecting to " + address + " failed", e);
        }
    }

    void accept(RdmaListener listener) throws Exception {
        session = listener.acceptAsync().get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }

    /** Sends one byte as a message of its own. */
    void write(int b) {
        try (Block block = endpoint.arena().allocate(1)) {
            block.segment().set(ValueLayout.JAVA_BYTE, 0, (byte) b);
            session.sendAsync(block, 1).join();
        }
    }

    /** The next byte of the stream, or -1 at its end. */
    int read() throws Exception {
        if (reading == null) {
            reading = session.receive(WAIT);
            readAt = 0;
        }
        if (reading.length() == 0) return -1;
        int b = reading.data().get(ValueLayout.JAVA_BYTE, readAt++) & 0xff;
        if (readAt == reading.length()) {
            reading.close();
            reading = null;
        }
        return b;
    }

    /** Ends this side's stream: an empty message. */
    void shutdownOutput() {
        try (Block block = endpoint.arena().allocate(1)) {
            session.sendAsync(block, 0).join();
        }
    }

    @Override
    public void close() {
        if (reading != null) reading.close();
        if (session != null) session.close();
    }
}
