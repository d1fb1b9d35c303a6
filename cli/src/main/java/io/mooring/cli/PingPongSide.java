package io.mooring.cli;

import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.ConnectOptions;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.Errno;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.QpInfo;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.VerbsException;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkCompletionException;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.WcOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.EnumSet;

/**
 * One end of the ping-pong: its own PD, CQ (for sends and receives), RC QP and a registered buffer whose first
 * half is sent from and whose second half is received (or written) into. Every completion is checked: an error
 * status, a message of the wrong shape, or none within {@link #PEER_TIMEOUT} ends the run with an exception. In
 * {@link PingPong.Mode#WRITE} a message is known to have arrived by its last byte, which carries the round's marker,
 * as in perftest's {@code ib_write_lat}. In {@link PingPong.Mode#READ} the pinging side
 * READs the peer's receive half into its own and waits for the READ's completion, as {@code ib_read_lat}.
 */
final class PingPongSide implements AutoCloseable {
    /** How long to wait for any completion before declaring the peer gone. */
    static final Duration PEER_TIMEOUT = Duration.ofSeconds(30);
    /** A peer has at most one message in flight; two spare receives keep an RNR wait off the measured path. */
    private static final int RECEIVES = 3;
    private static final Duration EVENT_WAIT = Duration.ofMillis(200);
    private static final QpCapabilities CAPABILITIES = QpCapabilities.DEFAULT;
    /** Reads the polled byte with acquire semantics: a plain read in a spin loop may be hoisted out of it. */
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();

    private final String role;
    private final PingPong.Settings settings;
    private final PingPong.Mode mode;
    private final ProtectionDomain pd;
    private final CompletionQueue cq;
    private final QueuePair qp;
    private final MemoryRegion buffer;
    private final WorkRequest send;
    private final ReceiveRequest receive;
    private final WorkCompletion[] one = {new WorkCompletion()};
    /** Write mode: this side's WRITEs whose completions were not polled yet. */
    private int unpolledWrites;

    /** @param role what the messages are called in errors: "ping" side or "pong" side */
    PingPongSide(String role, DeviceContext context, Arena arena, PingPong.Settings settings) {
        this.role = role;
        this.settings = settings;
        this.mode = settings.mode();
        this.pd = context.allocateProtectionDomain();
        this.cq = context.createCompletionQueue(CAPABILITIES.maxSendWr() + RECEIVES);
        this.qp = pd.createQueuePair(cq, cq, CAPABILITIES);
        int size = settings.size();
        this.buffer = pd.register(arena.allocate(2L * size, 64), mode == PingPong.Mode.READ
                ? EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_READ) : EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE));
        // inline as perftest does for small messages; a READ carries no data out, so it has none to inline
        boolean inline = size <= CAPABILITIES.maxInlineData() && mode != PingPong.Mode.READ;
        this.send = (switch (mode) {
            case SEND -> WorkRequest.send(buffer, 0, size);
            case WRITE, WRITE_IMM -> WorkRequest.write(buffer, 0, size);
            case READ -> WorkRequest.read(buffer, size, size);
        }).inline(inline);
        // A WRITE with immediate lands in the buffer; its receive only carries the immediate, so it needs no buffer.
        // A plain WRITE consumes no receive at all.
        this.receive = switch (mode) {
            case SEND -> ReceiveRequest.into(buffer, size, size);
            case WRITE_IMM -> new ReceiveRequest();
            case WRITE, READ -> null;
        };
    }

    /** RESET → INIT, and the receives posted, so that the peer's first message finds one. */
    void init() {
        qp.init(ConnectOptions.DEFAULT);
        if (receive != null) for (int i = 0; i < RECEIVES; i++) qp.post(receive);
    }

    QpInfo info() {
        return qp.info(ConnectOptions.DEFAULT);
    }

    /** Where the peer writes to in the write modes, and reads from in read mode: the receive half of the buffer. */
    long receiveAddress() {
        return buffer.address() + settings.size();
    }

    int rkey() {
        return buffer.rkey();
    }

    /** INIT → RTR → RTS towards the peer; in the write and read modes messages go to {@code address} under {@code rkey}. */
    void connect(QpInfo peer, long address, int rkey) {
        qp.readyToReceive(peer, ConnectOptions.DEFAULT);
        qp.readyToSend(ConnectOptions.DEFAULT);
        if (mode != PingPong.Mode.SEND) send.remote(address, rkey);
        if (mode == PingPong.Mode.WRITE_IMM) send.immediate(0);
    }

    /** Sends message {@code seq}: a SEND, a WRITE whose last byte is the round's marker, or a WRITE with immediate. */
    void send(int seq) {
        switch (mode) {
            case SEND, READ -> { }
            case WRITE -> {
                // a peer answering before our WRITE's completion was taken, round after round, must not fill the queue
                while (unpolledWrites == CAPABILITIES.maxSendWr()) takeWriteCompletions();
                buffer.segment().set(ValueLayout.JAVA_BYTE, settings.size() - 1L, marker(seq));
                unpolledWrites++;
            }
            case WRITE_IMM -> send.immediate(seq);
        }
        qp.post(send.wrId(seq));
    }

    /** The last byte of message {@code seq} in write mode: never the previous round's, nor the buffer's initial 0. */
    private static byte marker(int seq) {
        return (byte) (seq % 255 + 1);
    }

    /** One round trip of read mode: READs the peer's receive half into this side's and waits for its completion. */
    void read(int seq) throws InterruptedException {
        send(seq);
        WorkCompletion wc = next(seq);
        if (wc.opcode() != WcOpcode.RDMA_READ || wc.wrId() != seq) { // byte_len is defined for receives only
            throw new IllegalStateException(role + " side: READ " + seq + " completed as " + wc);
        }
    }

    /** Waits for message {@code seq} from the peer, checks it and posts a receive in its place. */
    void awaitReceive(int seq) throws InterruptedException {
        if (mode == PingPong.Mode.WRITE) {
            awaitWritten(seq);
            return;
        }
        while (true) {
            WorkCompletion wc = next(seq);
            if (!wc.opcode().isReceive()) continue; // one of our sends completed: checked in next()
            boolean expected = mode == PingPong.Mode.WRITE_IMM
                    ? wc.opcode() == WcOpcode.RECV_RDMA_WITH_IMM && wc.immediate() == seq
                    : wc.opcode() == WcOpcode.RECV && wc.byteLength() == settings.size();
            if (!expected) {
                throw new IllegalStateException(role + " side: message " + seq + " arrived as " + wc + ", expected "
                        + (mode == PingPong.Mode.WRITE_IMM ? "a WRITE with immediate " + seq
                        : "a " + settings.size() + "-byte SEND"));
            }
            qp.post(receive);
            return;
        }
    }

    /**
     * Spins on the last byte of the receive half until the peer's WRITE of message {@code seq} has landed, taking the
     * completions of this side's own WRITEs meanwhile (each is checked, and the CQ never fills). As in perftest, the
     * CQ is polled only while one of them is outstanding: once it is in, a spin reads the byte and nothing else (a
     * poll takes the CQ's lock and a downcall, which would delay seeing the byte land).
     */
    private void awaitWritten(int seq) {
        MemorySegment memory = buffer.segment();
        long last = 2L * settings.size() - 1;
        byte expected = marker(seq);
        long deadline = System.nanoTime() + PEER_TIMEOUT.toNanos();
        for (int spins = 0; ; spins++) {
            if ((byte) BYTE.getAcquire(memory, last) == expected) return;
            if (unpolledWrites > 0) takeWriteCompletions();
            if ((spins & 0xfff) == 0 && System.nanoTime() - deadline > 0) {
                throw new VerbsException("ibv_poll_cq", Errno.ETIMEDOUT.number(), "the buffer of the " + role + " side",
                        "message " + seq + " did not land within " + PEER_TIMEOUT.toSeconds()
                                + " s: the peer stopped answering");
            }
            // Now and then give the core away: over the soft provider's TCP fabric a reader thread of this JVM must
            // run for the peer's WRITE to land at all, and a small machine may have no other core for it.
            if ((spins & 0x3ff) == 0x3ff) Thread.yield();
            else Thread.onSpinWait();
        }
    }

    /** Takes the completions of this side's WRITEs that are in, checking each. */
    private void takeWriteCompletions() {
        while (unpolledWrites > 0 && cq.poll(one) == 1) {
            if (!one[0].isSuccess()) throw new WorkCompletionException(qp + " (" + role + " side)", one[0].copy());
            unpolledWrites--;
        }
    }

    /** Waits until every send has completed (and so has been checked). */
    void drainSends() throws InterruptedException {
        while (qp.outstandingSends() > 0) next(-1);
    }

    /** The next completion, which must be a success; busy polling spins, event polling sleeps on the channel. */
    private WorkCompletion next(int seq) throws InterruptedException {
        long deadline = System.nanoTime() + PEER_TIMEOUT.toNanos();
        while ((settings.busyPoll() ? cq.poll(one) : cq.poll(one, EVENT_WAIT)) == 0) {
            if (System.nanoTime() - deadline > 0) {
                throw new VerbsException("ibv_poll_cq", Errno.ETIMEDOUT.number(), cq + " of the " + role + " side",
                        "no completion for " + PEER_TIMEOUT.toSeconds() + " s while waiting for "
                                + (seq < 0 ? "the last sends" : "message " + seq) + ": the peer stopped answering");
            }
            if (settings.busyPoll()) Thread.onSpinWait();
        }
        WorkCompletion wc = one[0];
        if (!wc.isSuccess()) throw new WorkCompletionException(qp + " (" + role + " side)", wc.copy());
        return wc;
    }

    /** Closes the side's verbs objects (the graph orders their destruction). */
    @Override
    public void close() {
        qp.close();
        buffer.close();
        cq.close();
        pd.close();
    }

    @Override
    public String toString() {
        return role + " side " + qp;
    }
}
