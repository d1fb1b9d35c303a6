package io.mooring.lease;

import io.mooring.verbs.Bootstrap;
import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.ConnectOptions;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.values.Opcode;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.QpInfo;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.QpCapabilities;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.EnumSet;
import java.util.List;

/**
 * A hostile or broken peer for tests: a bare QP pair that bootstraps like a session and then SENDs arbitrary control
 * frames, decodes what the owner answers, and can stop posting receives (a wedged peer).
 */
final class RawPeer implements AutoCloseable {
    private static final int RECEIVES = 16;
    private static final int SLOT = 512;

    private final Socket socket = new Socket();
    private final Arena memory = Arena.ofAuto(); // freed by the GC: a dropped peer's memory too
    private final CompletionQueue cq;
    private final QueuePair qp;
    private final QueuePair data;
    private final MemoryRegion buffers;
    private final ArrayDeque<Message> answers = new ArrayDeque<>();
    private final WorkCompletion[] polled = {new WorkCompletion(), new WorkCompletion(), new WorkCompletion(),
            new WorkCompletion()};
    private boolean sent;
    private boolean receiving = true;

    RawPeer(ProtectionDomain pd, InetSocketAddress owner) throws IOException {
        socket.connect(owner, 10_000);
        cq = pd.context().createCompletionQueue(256);
        qp = pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
        data = pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
        buffers = pd.register(memory.allocate((RECEIVES + 1L) * SLOT, 4096), EnumSet.of(Access.LOCAL_WRITE));
        var bootstrap = Bootstrap.of(socket);
        // The session's bootstrap record: protocol version, the data QP, the message window and size it takes, and
        // the READ depths it allows out and in.
        var record = ByteBuffer.allocate(4 + QpInfo.BYTES + 16).putInt(MessageCodec.VERSION);
        data.info(ConnectOptions.DEFAULT).writeTo(record);
        record.putInt(16).putInt(4096).putInt(1).putInt(1).flip();
        var peer = bootstrap.exchange(qp.info(ConnectOptions.DEFAULT), record, record.limit());
        var peerRecord = peer.data();
        peerRecord.getInt();
        qp.connect(peer.qp(), ConnectOptions.DEFAULT);
        data.connect(QpInfo.readFrom(peerRecord), ConnectOptions.DEFAULT);
        for (int slot = 0; slot < RECEIVES; slot++) repost(slot);
        bootstrap.barrier();
    }

    private void repost(int slot) {
        qp.post(ReceiveRequest.into(buffers, (long) slot * SLOT, SLOT).wrId(slot));
    }

    /** SENDs {@code frame} and waits for the send's completion (whatever its status: a broken QP is an outcome). */
    void send(byte[] frame) throws InterruptedException {
        send(qp, WorkRequest.send(buffers, stage(frame), frame.length), frame.length);
    }

    /** SENDs {@code bytes} as an application message on the data QP, with {@code immediate} (its frame), and waits. */
    void sendData(byte[] bytes, int immediate) throws InterruptedException {
        send(data, WorkRequest.send(buffers, stage(bytes), bytes.length).opcode(Opcode.SEND_WITH_IMM).immediate(immediate),
                bytes.length);
    }

    private long stage(byte[] bytes) {
        long at = (long) RECEIVES * SLOT;
        buffers.segment().asSlice(at, bytes.length).copyFrom(MemorySegment.ofArray(bytes));
        return at;
    }

    private void send(QueuePair on, WorkRequest wr, int length) throws InterruptedException {
        sent = false;
        on.post(wr.wrId(-1));
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        while (!sent) {
            if (System.nanoTime() > deadline) throw new AssertionError("a SEND of " + length + " bytes never completed");
            poll();
        }
    }

    /** The owner's next answer (REVOKEs and RELEASEs of offers it had no room for skipped), or an AssertionError naming {@code at}. */
    Message nextAnswer(String at) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        while (true) {
            Message m = answers.poll();
            if (m instanceof Message.Revoke || m instanceof Message.Release) continue; // requests, not answers
            if (m != null) return m;
            if (System.nanoTime() > deadline) throw new AssertionError("no answer to " + at + " within 15 s");
            poll();
        }
    }

    /** Every control message the owner sends within {@code window}, notices included. */
    List<Message> everything(Duration window) throws InterruptedException {
        long deadline = System.nanoTime() + window.toNanos();
        while (System.nanoTime() < deadline) poll();
        List<Message> all = List.copyOf(answers);
        answers.clear();
        return all;
    }

    private void poll() throws InterruptedException {
        int n = cq.poll(polled, Duration.ofMillis(50));
        for (int i = 0; i < n; i++) {
            WorkCompletion wc = polled[i];
            if (!wc.opcode().isReceive()) {
                sent = true;
                continue;
            }
            if (wc.status() != WcStatus.SUCCESS) continue; // flushed: the session is over
            int slot = (int) wc.wrId();
            MemorySegment bytes = MemorySegment.ofArray(buffers.segment().asSlice((long) slot * SLOT, wc.byteLength())
                    .toArray(ValueLayout.JAVA_BYTE));
            if (receiving) repost(slot);
            try {
                answers.add(MessageCodec.decode(bytes));
            } catch (MalformedMessageException e) {
                throw new AssertionError("the owner sent a malformed frame: " + e.getMessage());
            }
        }
    }

    /** From now on the peer takes no more control messages: the owner's next SENDs meet RNR (a wedged peer). */
    void stopReceiving() {
        receiving = false;
    }

    /** Sends {@code m} encoded, as {@link #send(byte[])} does. */
    void send(Message m) throws InterruptedException {
        MemorySegment out = MemorySegment.ofArray(new byte[MessageCodec.MAX_MESSAGE]);
        send(out.asSlice(0, MessageCodec.encode(m, out)).toArray(ValueLayout.JAVA_BYTE));
    }

    /** Writes a closing session's goodbye on the bootstrap connection: {@code sent} messages to expect. */
    void goodbye(long sent) throws IOException {
        socket.getOutputStream().write(ByteBuffer.allocate(Long.BYTES).putLong(sent).array());
    }

    /**
     * Drops the bootstrap connection without a goodbye, as a crashed peer would: the QPs, CQ and region stay, and once
     * this peer is unreachable, the graph's Cleaner takes them.
     */
    void hangUp() throws IOException {
        socket.close();
    }

    @Override
    public void close() throws IOException {
        socket.close();
        qp.close();
        data.close();
        cq.close();
        buffers.close();
    }
}
