package io.mooring.lease;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Watches the bootstrap connections of an endpoint's sessions, which after the bootstrap carry one thing: a peer's
 * goodbye when it closes (how many messages and notices it posted, a long), then the connection's end. One selector
 * on one thread for the whole endpoint: a thread blocked per session would cost each session its stack (about 3 KiB
 * of heap for a parked virtual thread) while nothing happens for the session's whole life. What a connection says is
 * handled on a virtual thread of its own, as it may wait (a goodbye waits for the messages it counts).
 */
final class ConnectionWatch implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(ConnectionWatch.class.getName());

    /** What a watched connection said. Each connection says one of these, once. */
    interface Watcher {
        /** The peer said goodbye, counting {@code sent} messages and notices. */
        void goodbye(long sent);

        /** The connection ended without a goodbye, or broke ({@code why}). */
        void ended(String why);
    }

    /** A connection and what has arrived of its goodbye. */
    private record Watched(SocketChannel channel, Watcher watcher, ByteBuffer goodbye) {}

    private final Selector selector;
    private final ConcurrentLinkedQueue<Watched> added = new ConcurrentLinkedQueue<>(); // registered by the thread
    private final Thread thread;
    private volatile boolean closed;

    ConnectionWatch(String name) {
        try {
            selector = Selector.open();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot open a selector to watch the sessions' connections", e);
        }
        // Virtual: a select blocks its carrier, and the scheduler lends another meanwhile (one per endpoint, not per
        // session); no JVM-wide daemon thread of its own.
        thread = Thread.ofVirtual().name("mooring-connection-watch-" + name).start(this::run);
    }

    /**
     * Watches {@code channel} (a connected session's, done with its bootstrap) from now on; it is made non-blocking, so
     * it is written through the channel from then on.
     */
    void watch(SocketChannel channel, Watcher watcher) throws IOException {
        channel.configureBlocking(false);
        added.add(new Watched(channel, watcher, ByteBuffer.allocate(Long.BYTES)));
        selector.wakeup();
    }

    private void run() {
        try {
            while (!closed) {
                selector.select();
                for (Watched w; (w = added.poll()) != null; ) {
                    try {
                        w.channel.register(selector, SelectionKey.OP_READ, w);
                    } catch (ClosedChannelException e) { // the session was closed meanwhile: nothing to watch
                    }
                }
                for (SelectionKey key : selector.selectedKeys()) read(key);
                selector.selectedKeys().clear();
            }
        } catch (IOException | RuntimeException e) {
            if (!closed) LOG.log(System.Logger.Level.ERROR, "watching the sessions' connections failed", e);
        }
    }

    private void read(SelectionKey key) {
        Watched w = (Watched) key.attachment();
        int read;
        try {
            read = w.channel.read(w.goodbye);
        } catch (IOException e) {
            key.cancel();
            tell(() -> w.watcher.ended("the session's TCP connection broke: " + e.getMessage()));
            return;
        }
        if (!w.goodbye.hasRemaining()) {
            key.cancel();
            long sent = w.goodbye.flip().getLong();
            tell(() -> w.watcher.goodbye(sent));
        } else if (read < 0) {
            key.cancel();
            tell(() -> w.watcher.ended("the peer dropped the connection without a goodbye"));
        }
    }

    private static void tell(Runnable what) {
        Thread.ofVirtual().name("mooring-session-end").start(what);
    }

    /** Stops watching; call once every session of the endpoint has ended. */
    @Override
    public void close() {
        closed = true;
        selector.wakeup();
        try {
            thread.join();
            selector.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "closing the connection watch: " + e.getMessage());
        }
    }
}
