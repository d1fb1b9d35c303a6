package io.mooring.verbs.soft;

import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayDeque;

/**
 * The answers a {@link TcpLink} owes its peer, written to the connection by a virtual thread of their own, so that the
 * link's reader never waits on a write: two peers READing more from each other at once than their sockets' buffers
 * hold would otherwise each block writing an answer that the other's reader, blocked the same way, never reads. What
 * is owed is bounded by what an honest peer's {@link SendWindow} can have in flight; a peer asking for more makes the
 * reader wait for room, which stalls that peer's own connection and nothing else. Answers that came together go out
 * with one flush.
 */
final class AnswerWriter {
    /** One answer, with the bytes of a READ's ({@code length} of {@code data}). */
    private record Owed(int seq, Wire.Response answer, byte[] data, int length) {}

    private final TcpLink link;
    private final DataOutputStream out; // shared with the requester's requests: written under its monitor
    private final String name;
    private final ArrayDeque<Owed> owed = new ArrayDeque<>(2); // guarded by itself
    private long owedBytes;   // guarded by owed
    private boolean started;  // guarded by owed: the writing thread runs (made at the first answer)

    AnswerWriter(TcpLink link, DataOutputStream out, String name) {
        this.link = link;
        this.out = out;
        this.name = name;
    }

    /**
     * Owes the peer {@code answer} to its request {@code seq}, with {@code length} bytes of {@code data}; waits while
     * more is owed than an honest peer can ask for. Reader thread only.
     *
     * @throws IOException if the connection closed meanwhile
     */
    void owe(int seq, Wire.Response answer, byte[] data, int length) throws IOException {
        synchronized (owed) {
            while (!owed.isEmpty() && (owed.size() >= SendWindow.MAX_REQUESTS
                    || owedBytes - owed.peek().length + length > SendWindow.MAX_BYTES)) {
                if (link.isClosed()) throw new IOException("closed");
                try {
                    owed.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted");
                }
            }
            owed.add(new Owed(seq, answer, data, length));
            owedBytes += length;
            if (!started) {
                started = true;
                Thread.ofVirtual().name(name).start(this::writeLoop);
            }
            owed.notifyAll();
        }
    }

    /** Wakes the writing thread and a waiting reader: the connection closed. */
    void closed() {
        synchronized (owed) {
            owed.notifyAll();
        }
    }

    private void writeLoop() {
        try {
            Owed next;
            while ((next = awaitNext()) != null) {
                synchronized (out) {
                    TcpLink.writeAnswer(out, next.seq, next.answer, next.data, next.length);
                }
                boolean drained;
                synchronized (owed) {
                    owed.poll();
                    owedBytes -= next.length;
                    drained = owed.isEmpty();
                    owed.notifyAll(); // a reader waiting for room
                }
                if (drained) {
                    synchronized (out) {
                        out.flush();
                    }
                }
            }
        } catch (IOException e) {
            link.close(); // the requester sees no answer, as on a broken wire
        }
    }

    /** The oldest answer owed (left in place until written), or null once the connection closed. */
    private Owed awaitNext() {
        synchronized (owed) {
            while (owed.isEmpty() && !link.isClosed()) {
                try {
                    owed.wait();
                } catch (InterruptedException e) {
                    return null;
                }
            }
            return link.isClosed() ? null : owed.peek();
        }
    }
}
