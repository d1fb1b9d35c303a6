package io.mooring.verbs.soft;

import java.io.IOException;
import java.util.ArrayDeque;

/**
 * Writes the answers a {@link TcpLink}'s reader may not write itself (see there: a write that could block), in order,
 * on a virtual thread of its own made at the first such answer. What is owed is bounded by what an honest peer's
 * {@link SendWindow} can have in flight; a peer asking for more makes the reader wait for room, which stalls that
 * peer's own connection and nothing else. Answers owed together go out with one flush.
 */
final class AnswerWriter {
    /** One answer, with the bytes of a READ's ({@code length} of {@code data}); a null answer only flushes. */
    private record Owed(int seq, Wire.Response answer, byte[] data, int length) {}

    private static final Owed FLUSH = new Owed(0, null, null, 0);

    private final TcpLink link;
    private final String name;
    private final ArrayDeque<Owed> owed = new ArrayDeque<>(2); // guarded by itself; the head until written
    private long owedBytes;   // guarded by owed
    private boolean started;  // guarded by owed: the writing thread runs

    AnswerWriter(TcpLink link, String name) {
        this.link = link;
        this.name = name;
    }

    /** Whether nothing is owed: an answer written by the reader now would not overtake one. */
    boolean isIdle() {
        synchronized (owed) {
            return owed.isEmpty();
        }
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
            add(new Owed(seq, answer, data, length));
        }
    }

    /** Flushes what the reader wrote, as it could not without waiting. */
    void flushSoon() {
        synchronized (owed) {
            add(FLUSH);
        }
    }

    private void add(Owed o) {
        owed.add(o);
        owedBytes += o.length;
        if (!started) {
            started = true;
            Thread.ofVirtual().name(name).start(this::writeLoop);
        }
        owed.notifyAll();
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
                boolean last;
                synchronized (owed) {
                    last = owed.size() == 1;
                }
                link.writeAnswer(next.seq, next.answer, next.data, next.length, last);
                synchronized (owed) {
                    owed.poll();
                    owedBytes -= next.length;
                    owed.notifyAll(); // a reader waiting for room
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
