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
import io.mooring.verbs.values.DeviceAttributes;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.WcOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.EnumSet;

/**
 * One end of the ping-pong: its own PD, CQ (for sends and receives), RC QP and a registered buffer of N slots
 * ({@code --concurrency}) to send from, then N slots to receive (or be written, or be read) into; round trip
 * {@code seq} uses slot {@code seq % N} on both sides. Every completion is checked: an error status, a message out of
 * order or of the wrong shape, or none within {@link #PEER_TIMEOUT} ends the run with an exception. In
 * {@link PingPong.Mode#WRITE} a message is known to have arrived by its slot's last byte, which carries a marker, as
 * in perftest's {@code ib_write_lat}. In {@link PingPong.Mode#READ} the pinging side READs the peer's receive slot
 * into its own, as {@code ib_read_lat}; up to the negotiated READ depth of them are outstanding at once.
 */
final class PingPongSide implements AutoCloseable {
    /** How long to wait for any completion before declaring the peer gone. */
    static final Duration PEER_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration EVENT_WAIT = Duration.ofMillis(200);
    /** Reads the polled byte with acquire semantics: a plain read in a spin loop may be hoisted out of it. */
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();

    private final String role;
    private final PingPong.Settings settings;
    private final PingPong.Mode mode;
    private final int size;
    private final int slots;
    /**
     * Room for N requests in flight and as many whose completions are in but not yet taken (a reply may be seen
     * before its request's own completion); a post past it first takes completions ({@link #post}).
     */
    private final int sendDepth;
    private final ProtectionDomain pd;
    private final CompletionQueue cq;
    private final QueuePair qp;
    private final MemoryRegion buffer;
    /** Per slot: the request that sends (writes, reads) it. */
    private final WorkRequest[] requests;
    /** Per slot: the receive its message lands in; null where the mode takes no receive. */
    private final ReceiveRequest[] receives;
    private final WorkCompletion[] one = {new WorkCompletion()};
    /** This side's sends whose completions were not taken yet (counted here: asking the QP takes its lock). */
    private int sendsOut;
    /** Messages taken from the peer so far: RC delivers them in order, so the next one is number {@code arrived}. */
    private int arrived;
    /** READs completed so far: a send queue completes in order. */
    private int readsDone;
    /** The READ depth the peer's device allows, and the one negotiated: set on connecting. */
    private int peerReadDepth;
    private int readDepth;

    /** @param role what the messages are called in errors: "ping" side or "pong" side */
    PingPongSide(String role, DeviceContext context, Arena arena, PingPong.Settings settings) {
        this.role = role;
        this.settings = settings;
        this.mode = settings.mode();
        this.size = settings.size();
        this.slots = settings.concurrency();
        this.sendDepth = Math.max(QpCapabilities.DEFAULT.maxSendWr(), 2 * slots);
        int receiveDepth = slots;
        var capabilities = QpCapabilities.builder().maxSendWr(sendDepth).maxRecvWr(receiveDepth).build();
        this.pd = context.allocateProtectionDomain();
        this.cq = context.createCompletionQueue(sendDepth + receiveDepth);
        this.qp = pd.createQueuePair(cq, cq, capabilities);
        this.buffer = pd.register(arena.allocate(2L * slots * size, 64), mode == PingPong.Mode.READ
                ? EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_READ) : EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE));
        // inline as perftest does for small messages; a READ carries no data out, so it has none to inline
        boolean inline = size <= capabilities.maxInlineData() && mode != PingPong.Mode.READ;
        this.requests = new WorkRequest[slots];
        this.receives = new ReceiveRequest[slots];
        for (int k = 0; k < slots; k++) {
            requests[k] = (switch (mode) {
                case SEND -> WorkRequest.send(buffer, sendOffset(k), size);
                case WRITE, WRITE_IMM -> WorkRequest.write(buffer, sendOffset(k), size);
                case READ -> WorkRequest.read(buffer, receiveOffset(k), size);
            }).inline(inline);
            // A WRITE with immediate lands in the buffer; its receive only carries the immediate, so it needs no
            // buffer. A plain WRITE and a READ consume no receive at all.
            receives[k] = switch (mode) {
                case SEND -> ReceiveRequest.into(buffer, receiveOffset(k), size).wrId(k);
                case WRITE_IMM -> new ReceiveRequest().wrId(k);
                case WRITE, READ -> null;
            };
        }
    }

    private long sendOffset(int slot) {
        return (long) slot * size;
    }

    private long receiveOffset(int slot) {
        return (long) (slots + slot) * size;
    }

    /** RESET → INIT, and a receive posted per slot, in slot order, so that the peer's first messages find them. */
    void init() {
        qp.init(ConnectOptions.DEFAULT);
        if (receives[0] != null) for (ReceiveRequest r : receives) qp.post(r);
    }

    QpInfo info() {
        return qp.info(ConnectOptions.DEFAULT);
    }

    /** Where the peer writes to in the write modes, and reads from in read mode: the first receive slot. */
    long receiveAddress() {
        return buffer.address() + receiveOffset(0);
    }

    int rkey() {
        return buffer.rkey();
    }

    /** The READ depth this side's device allows either way: as requester (max_qp_init_rd_atom) and responder. */
    int readDepthAllowed() {
        DeviceAttributes device = pd.context().device().attributes();
        return Math.max(1, Math.min(device.maxQpInitRdAtom(), device.maxQpRdAtom()));
    }

    /**
     * INIT → RTR → RTS towards the peer, with {@code --concurrency} as this QP's READs outstanding (max_rd_atomic)
     * and the peer's it accepts (max_dest_rd_atomic), capped by what both devices allow ({@code peerReadDepth} is the
     * peer's {@link #readDepthAllowed}); in the write and read modes slot k goes to {@code address} + k × size
     * under {@code rkey}.
     */
    void connect(QpInfo peer, long address, int rkey, int peerReadDepth) {
        this.peerReadDepth = peerReadDepth;
        this.readDepth = Math.min(slots, Math.min(readDepthAllowed(), peerReadDepth));
        ConnectOptions options = ConnectOptions.builder().maxRdAtomic(readDepth).maxDestRdAtomic(readDepth).build();
        qp.readyToReceive(peer, options);
        qp.readyToSend(options);
        if (mode == PingPong.Mode.SEND) return;
        for (int k = 0; k < slots; k++) requests[k].remote(address + k * (long) size, rkey);
    }

    /** The line that says which READ depth was negotiated, and what the device made of it. */
    String readDepth() {
        int granted = qp.query().maxRdAtomic();
        return "READ depth: " + readDepth + " outstanding per queue pair (--concurrency " + slots + "; this device"
                + " allows " + readDepthAllowed() + ", the peer's " + peerReadDepth
                + (granted == readDepth ? "" : "; the device granted " + granted) + ")";
    }

    /**
     * Posts round trip {@code seq}'s request in its slot: a SEND, a WRITE whose last byte is the slot's marker, a
     * WRITE with immediate {@code seq}, or a READ. A full send queue is first given room by taking completions.
     */
    void post(int seq) throws InterruptedException {
        while (sendsOut == sendDepth) take(seq);
        int slot = seq % slots;
        WorkRequest request = requests[slot].wrId(seq);
        switch (mode) {
            case SEND, READ -> { }
            case WRITE -> buffer.segment().set(ValueLayout.JAVA_BYTE, sendOffset(slot) + size - 1, marker(seq));
            case WRITE_IMM -> request.immediate(seq);
        }
        qp.post(request);
        sendsOut++;
    }

    /**
     * The last byte of message {@code seq} in write mode: its slot's round plus one, so never the slot's previous
     * message's, nor the buffer's initial 0.
     */
    private byte marker(int seq) {
        return (byte) (seq / slots % 255 + 1);
    }

    /** Waits until message {@code seq} from the peer is in (in read mode: until READ {@code seq} has completed). */
    void await(int seq) throws InterruptedException {
        switch (mode) {
            case WRITE -> awaitWritten(seq);
            case READ -> {
                while (readsDone <= seq) take(seq);
            }
            case SEND, WRITE_IMM -> {
                while (arrived <= seq) take(seq);
            }
        }
    }

    /** Waits for the next completion and takes it: a message from the peer, a READ, or one of this side's sends. */
    private void take(int seq) throws InterruptedException {
        WorkCompletion wc = next(seq);
        if (wc.opcode().isReceive()) {
            received(wc);
            return;
        }
        sendsOut--; // checked in next()
        if (mode == PingPong.Mode.READ) read(wc);
    }

    /** Checks the next message from the peer and posts its slot's receive again. */
    private void received(WorkCompletion wc) {
        int seq = arrived;
        int slot = seq % slots;
        boolean expected = wc.wrId() == slot && (mode == PingPong.Mode.WRITE_IMM
                ? wc.opcode() == WcOpcode.RECV_RDMA_WITH_IMM && wc.immediate() == seq
                : wc.opcode() == WcOpcode.RECV && wc.byteLength() == size);
        if (!expected) {
            throw new IllegalStateException(role + " side: message " + seq + " arrived as " + wc + ", expected "
                    + (mode == PingPong.Mode.WRITE_IMM ? "a WRITE with immediate " + seq : "a " + size + "-byte SEND")
                    + " into slot " + slot);
        }
        qp.post(receives[slot]);
        arrived++;
    }

    private void read(WorkCompletion wc) {
        if (wc.opcode() != WcOpcode.RDMA_READ || wc.wrId() != readsDone) { // byte_len is defined for receives only
            throw new IllegalStateException(role + " side: READ " + readsDone + " completed as " + wc);
        }
        readsDone++;
    }

    /**
     * Spins on the last byte of message {@code seq}'s receive slot until the peer's WRITE has landed, taking the
     * completions of this side's own WRITEs meanwhile (each is checked, and the send queue never fills). As in
     * perftest, the CQ is polled only while one of them is outstanding: once they are in, a spin reads the byte and
     * nothing else (a poll takes the CQ's lock and a downcall, which would delay seeing the byte land).
     */
    private void awaitWritten(int seq) {
        MemorySegment memory = buffer.segment();
        long last = receiveOffset(seq % slots) + size - 1;
        byte expected = marker(seq);
        long deadline = System.nanoTime() + PEER_TIMEOUT.toNanos();
        for (int spins = 0; ; spins++) {
            if ((byte) BYTE.getAcquire(memory, last) == expected) return;
            while (sendsOut > 0 && cq.poll(one) == 1) {
                checked(one[0]);
                sendsOut--;
            }
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

    /** Waits until every send has completed (and so has been checked). */
    void drainSends() throws InterruptedException {
        while (sendsOut > 0) take(-1);
    }

    /** The next completion, which must be a success; busy polling spins, event polling sleeps on the channel. */
    private WorkCompletion next(int seq) throws InterruptedException {
        long deadline = System.nanoTime() + PEER_TIMEOUT.toNanos();
        while ((settings.busyPoll() ? cq.poll(one) : cq.poll(one, EVENT_WAIT)) == 0) {
            if (System.nanoTime() - deadline > 0) {
                throw new VerbsException("ibv_poll_cq", Errno.ETIMEDOUT.number(), cq + " of the " + role + " side",
                        "no completion for " + PEER_TIMEOUT.toSeconds() + " s while waiting for "
                                + (seq < 0 ? "the last sends" : "round trip " + seq) + ": the peer stopped answering");
            }
            if (settings.busyPoll()) Thread.onSpinWait();
        }
        return checked(one[0]);
    }

    private WorkCompletion checked(WorkCompletion wc) {
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
