package io.mooring.verbs.soft;

import io.mooring.verbs.values.Gid;
import io.mooring.verbs.values.Opcode;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.System.Logger.Level;
import java.net.Socket;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One TCP connection between two connected QPs, carrying both directions: each side's requester sends numbered
 * REQUEST frames, one at a time ({@link #exchange}) or many before the first answer ({@link #post}, by its
 * {@link SendWindow}); each side's reader thread executes the peer's REQUESTs against its QP in order and answers each
 * with a RESPONSE of the same number, so answers come back in the order of the requests. Frames are length-checked;
 * anything malformed closes the connection (the requester then sees no answer, as on a broken wire).
 *
 * <p>A reader must never wait on a write: two peers READing more from each other at once than their sockets' buffers
 * hold would each block writing an answer that the other's reader, blocked the same way, never reads. So every frame
 * says how many bytes of the other direction its sender's reader has taken ({@code consumed}), and a reader writes an
 * answer itself only while what the peer has not taken yet, with the answer, is at most {@link #DIRECT_BYTES} — far
 * less than a socket's buffers hold, so the write cannot block. Any other answer goes to the {@link AnswerWriter}.
 *
 * <pre>
 * HELLO    magic:int version:short srcQpn:int dstQpn:int srcGid:16 srcLid:int dial:int token:long
 * REQUEST  type:byte(1) seq:int consumed:long opcode:int psn:int raddr:long rkey:int length:int imm:int cmpAdd:long
 *          swap:long payloadLength:int payload
 * RESPONSE type:byte(2) seq:int consumed:long kind:byte rnrTimer:byte atomicOriginal:long dataLength:int data
 * </pre>
 */
final class TcpLink implements Link {
    private static final System.Logger LOG = System.getLogger(TcpLink.class.getName());
    static final int MAGIC = 0x4d4f4f52; // "MOOR"
    static final short VERSION = 4;
    private static final byte REQUEST = 1;
    private static final byte RESPONSE = 2;
    private static final int REQUEST_HEADER = 61;
    private static final int RESPONSE_HEADER = 27;
    /**
     * How much the peer may not have taken yet, a direct answer included, for the reader to write that answer itself:
     * a fraction of the smallest buffers a connection starts with (16 KiB to send, 128 KiB to receive, by default).
     */
    static final int DIRECT_BYTES = 16 * 1024;
    private static final int MAX_PAYLOAD = 1 << 30;
    private static final byte[] NO_BYTES = {};
    /** The largest request payload (or READ answer) the reader keeps its buffer for; a larger one gets its own. */
    private static final int KEPT_PAYLOAD = 256 * 1024;
    /**
     * TCP does not lose requests, and the responder answers every one (DROPPED when it is not ready), so a
     * missing answer means a hung or vanished peer, not a lost packet: wait at least this long for it rather
     * than the QP's ACK timeout, which is sized for a NIC, not for a loaded host's scheduler.
     */
    static final long HUNG_PEER_NANOS = TimeUnit.SECONDS.toNanos(5);

    /**
     * The dialer's first frame: who it is, which QP it wants, which of its dials this is (they are numbered per
     * QP, so both ends can tell a connection from one that a later dial superseded), and the token of the QP it
     * wants, from that QP's {@code QpInfo}, as proof that it is the peer the QP was connected to.
     */
    record Hello(int sourceQpn, int targetQpn, Gid sourceGid, int sourceLid, int dial, long token) {
        void write(OutputStream os) throws IOException {
            var out = new DataOutputStream(os);
            out.writeInt(MAGIC);
            out.writeShort(VERSION);
            out.writeInt(sourceQpn);
            out.writeInt(targetQpn);
            out.writeLong(sourceGid.subnetPrefix());
            out.writeLong(sourceGid.interfaceId());
            out.writeInt(sourceLid);
            out.writeInt(dial);
            out.writeLong(token);
            out.flush();
        }

        static Hello read(DataInputStream in) throws IOException {
            int magic = in.readInt();
            short version = in.readShort();
            if (magic != MAGIC || version != VERSION) {
                throw new IOException("not a soft fabric peer (magic 0x" + Integer.toHexString(magic) + ", version "
                        + version + ")");
            }
            return new Hello(in.readInt(), in.readInt(), new Gid(in.readLong(), in.readLong()), in.readInt(),
                    in.readInt(), in.readLong());
        }

        /** Whether {@code other} comes from the same dialing QP. */
        boolean sameDialer(Hello other) {
            return sourceQpn == other.sourceQpn && sourceLid == other.sourceLid && sourceGid.equals(other.sourceGid);
        }
    }

    private final Socket socket;
    private final SoftQp qp;
    private final int peerQpn; // who is at the other end: requests are executed on its behalf only
    private final DataInputStream in;
    private final DataOutputStream out;
    /** Taken to write frames: blocking by the requester and the answer writer, tried only by the reader. */
    private final ReentrantLock writing = new ReentrantLock();
    private long written;               // guarded by writing: bytes of the frames written
    private volatile long consumed;     // written by the reader thread only: bytes of the frames it read
    private volatile long peerConsumed; // reader thread only: bytes of ours the peer's reader had read, by its last frame
    private boolean answersUnflushed;   // reader thread only: answers it wrote since it last flushed
    /** Answers not yet taken, oldest first; the n-th answer to arrive is that of request n. Guarded by itself. */
    private final ArrayDeque<Wire.Response> answers = new ArrayDeque<>(2);
    /** Answers' byte arrays the requester is done with, filled again by later answers of their size. Guarded by answers. */
    private final ArrayDeque<byte[]> spareData = new ArrayDeque<>(2);
    private int taken;                  // guarded by answers: the number of the last answer taken (or discarded)
    private volatile int arrived;       // written under answers: the number of the last answer that arrived
    private int sequence;               // requester thread only: the number of the last request posted
    private volatile Thread waiter;     // the requester thread waiting for answers: unparked by each one
    private volatile boolean closed;
    private final AnswerWriter answerWriter;
    /** Reader thread only: the peer's request being served, and its payload (or a READ's answer), reused. */
    private final Wire.Request served = new Wire.Request();
    private byte[] servedPayload = new byte[64];

    private TcpLink(Socket socket, SoftQp qp, int peerQpn, String device) throws IOException {
        this.socket = socket;
        this.qp = qp;
        this.peerQpn = peerQpn;
        this.in = new DataInputStream(new BufferedInputStream(socket.getInputStream()));
        this.out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream()));
        this.answerWriter = new AnswerWriter(this, "soft-link-answers-" + device + "-" + qp.qpNumber());
    }

    /** Attaches a connected socket to {@code qp} and starts reading it, or closes it if {@code qp} refuses it. */
    static void start(Socket socket, SoftQp qp, int peerQpn, String device, Hello hello) throws IOException {
        var link = new TcpLink(socket, qp, peerQpn, device);
        if (!qp.attach(link, hello)) {
            link.close();
            return;
        }
        Thread.ofVirtual().name("soft-link-" + device + "-" + qp.qpNumber()).start(link::readLoop);
    }

    /** One request at a time: posts it and waits for its answer (requester thread only). */
    @Override
    public Wire.Response exchange(Wire.Request r, long timeoutNanos) throws InterruptedException {
        int seq = post(r);
        if (seq < 0 || !flush()) return Wire.Response.DROPPED;
        long deadline = System.nanoTime() + Math.max(timeoutNanos, HUNG_PEER_NANOS);
        waiter = Thread.currentThread();
        Wire.Response answer;
        while ((answer = answer(seq)) == null) {
            long left = deadline - System.nanoTime();
            if (closed || left <= 0) return Wire.Response.DROPPED;
            LockSupport.parkNanos(this, left);
            if (Thread.interrupted()) throw new InterruptedException();
        }
        if (answer.data() == null) return answer;
        System.arraycopy(answer.data(), 0, r.payload(), 0, Math.min(answer.data().length, r.length()));
        recycle(answer.data());
        return Wire.Response.ACK; // a READ's bytes, now where the requester expects them
    }

    /**
     * Writes {@code r} as the next request frame without flushing (requester thread only); its answer is
     * {@link #answer} of the number returned. Returns -1 if the connection is closed (or closes now).
     */
    int post(Wire.Request r) {
        if (closed) return -1;
        int seq = ++sequence;
        try {
            int carried = r.payload() == null || r.isRead() ? 0 : r.length(); // a READ's length: what it asks
            writing.lock();
            try {
                out.writeByte(REQUEST);
                out.writeInt(seq);
                out.writeLong(consumed);
                out.writeInt(r.opcode());
                out.writeInt(r.psn());
                out.writeLong(r.remoteAddress());
                out.writeInt(r.rkey());
                out.writeInt(r.length());
                out.writeInt(r.immediate());
                out.writeLong(r.compareAdd());
                out.writeLong(r.swap());
                out.writeInt(carried);
                if (carried > 0) out.write(r.payload(), 0, carried);
                written += REQUEST_HEADER + carried;
            } finally {
                writing.unlock();
            }
            return seq;
        } catch (IOException e) {
            close();
            return -1;
        }
    }

    /** Sends what {@link #post} wrote; false if the connection is closed (or closes now). */
    boolean flush() {
        try {
            writing.lock();
            try {
                out.flush();
            } finally {
                writing.unlock();
            }
            return !closed;
        } catch (IOException e) {
            close();
            return false;
        }
    }

    /**
     * The answer to request {@code seq} if it has come, discarding the answers before it (to requests given up on);
     * null if it has not come yet. Requester thread only.
     */
    Wire.Response answer(int seq) {
        synchronized (answers) {
            while (taken - seq < 0 && !answers.isEmpty()) {
                Wire.Response a = answers.poll();
                if (++taken == seq) return a;
            }
            return null;
        }
    }

    /**
     * The requester is done with {@code data}, the bytes of an answer it took: a later answer of that size is read
     * into it, so that a stream of READs allocates nothing per answer. Requester thread only.
     */
    void recycle(byte[] data) {
        if (data == null || data.length > KEPT_PAYLOAD) return;
        synchronized (answers) {
            if (spareData.size() < SendWindow.MAX_REQUESTS) spareData.push(data);
        }
    }

    /** An array for an answer's {@code bytes}: one the requester gave back if it has that size, else a new one. */
    private byte[] answerData(int bytes) {
        synchronized (answers) {
            byte[] spare = spareData.poll();
            if (spare != null && spare.length == bytes) return spare;
        }
        return new byte[bytes];
    }

    /** The number of the last answer that arrived: it changes with each, which {@link #wakes} the waiter. */
    int arrived() {
        return arrived;
    }

    /** The requester thread that waits for the next answer (or for this connection to close). */
    void wakes(Thread requester) {
        waiter = requester;
    }

    boolean isClosed() {
        return closed;
    }

    private void readLoop() {
        try {
            while (!closed) {
                if (answersUnflushed && in.available() == 0) { // requests that came together are answered together
                    answersUnflushed = false;
                    if (writing.tryLock()) {
                        try {
                            out.flush();
                        } finally {
                            writing.unlock();
                        }
                    } else {
                        answerWriter.flushSoon(); // whoever writes now may block: never wait for it here
                    }
                }
                byte type = in.readByte();
                switch (type) {
                    case REQUEST -> serve();
                    case RESPONSE -> accept();
                    default -> throw new IOException("unknown frame type " + type);
                }
            }
        } catch (EOFException e) {
            // the peer closed the connection
        } catch (IOException e) {
            if (!closed) LOG.log(Level.DEBUG, "soft link of qpn " + qp.qpNumber() + " closed: " + e.getMessage());
        } finally {
            close();
        }
    }

    private void serve() throws IOException {
        int seq = in.readInt();
        peerConsumed = in.readLong();
        int opcode = in.readInt();
        int psn = in.readInt();
        long raddr = in.readLong();
        int rkey = in.readInt();
        int length = checkedLength(in.readInt());
        int imm = in.readInt();
        long compareAdd = in.readLong();
        long swap = in.readLong();
        int carried = checkedLength(in.readInt());
        boolean read = opcode == Opcode.RDMA_READ.code();
        byte[] payload = payloadBuffer(read ? length : carried); // a READ's answer is written into it
        in.readFully(payload, 0, carried);
        consumed += REQUEST_HEADER + carried;
        Wire.Response answer = qp.respond(served.set(opcode, peerQpn, psn, raddr, rkey, length, payload, imm,
                compareAdd, swap), this);
        int answered = read && answer.kind() == Wire.Kind.ACK ? length : 0;
        if (answerWriter.isIdle() && writing.tryLock()) {
            try {
                if (written - peerConsumed + RESPONSE_HEADER + answered <= DIRECT_BYTES) {
                    writeAnswer(seq, answer, payload, answered);
                    answersUnflushed = true;
                    return;
                }
            } finally {
                writing.unlock();
            }
        }
        if (answered > 0 && payload == servedPayload) servedPayload = NO_BYTES; // the writer's until written
        answerWriter.owe(seq, answer, payload, answered);
    }

    /** Writes the RESPONSE frame answering request {@code seq}; the caller holds {@link #writing}. */
    private void writeAnswer(int seq, Wire.Response answer, byte[] data, int length) throws IOException {
        out.writeByte(RESPONSE);
        out.writeInt(seq);
        out.writeLong(consumed);
        out.writeByte(answer.kind().code);
        out.writeByte(answer.rnrTimer());
        out.writeLong(answer.atomicOriginal());
        out.writeInt(length);
        out.write(data, 0, length);
        written += RESPONSE_HEADER + length;
    }

    /** Writes an answer for the {@link AnswerWriter}, flushing it if {@code flush}; may block. */
    void writeAnswer(int seq, Wire.Response answer, byte[] data, int length, boolean flush) throws IOException {
        writing.lock();
        try {
            if (answer != null) writeAnswer(seq, answer, data, length);
            if (flush) out.flush();
        } finally {
            writing.unlock();
        }
    }

    /**
     * Where a request's payload of {@code bytes} (or a READ's answer) is read to: the reader's own buffer, grown as
     * needed up to {@link #KEPT_PAYLOAD} — the responder copies out of it (or into it, for the answer) before the next
     * request is read — so that a stream of 8 KiB READs allocates nothing per request.
     */
    private byte[] payloadBuffer(int bytes) {
        if (bytes <= servedPayload.length) return servedPayload;
        if (bytes > KEPT_PAYLOAD) return new byte[bytes];
        return servedPayload = new byte[Math.max(bytes, Math.min(2 * servedPayload.length, KEPT_PAYLOAD))];
    }

    private void accept() throws IOException {
        int seq = in.readInt();
        peerConsumed = in.readLong();
        int code = in.readUnsignedByte();
        int rnrTimer = in.readUnsignedByte();
        long original = in.readLong();
        int length = checkedLength(in.readInt());
        byte[] data = length == 0 ? null : answerData(length);
        if (data != null) in.readFully(data);
        consumed += RESPONSE_HEADER + length;
        Wire.Kind kind = Wire.Kind.of(code);
        if (kind == null) throw new IOException("unknown response kind " + code + " in the answer to request " + seq);
        var answer = new Wire.Response(kind, rnrTimer, data, original);
        synchronized (answers) {
            if (seq != arrived + 1) throw new IOException("answer " + seq + " after answer " + arrived);
            answers.add(answer);
            arrived = seq;
        }
        LockSupport.unpark(waiter);
    }

    private static int checkedLength(int n) throws IOException {
        if (n < 0 || n > MAX_PAYLOAD) throw new IOException("frame length " + n + " outside [0, " + MAX_PAYLOAD + "]");
        return n;
    }

    @Override
    public void close() {
        if (closed) return;
        closed = true;
        qp.detach(this);
        TcpFabric.closeQuietly(socket);
        answerWriter.closed();
        LockSupport.unpark(waiter); // a requester waiting for an answer that cannot come now
    }
}
