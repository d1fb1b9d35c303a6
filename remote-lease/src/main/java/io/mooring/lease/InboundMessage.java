package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.verbs.WorkCompletion;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * An application message received on a {@link RdmaSession}: the block the NIC wrote it into, now the application's
 * (no copy was made). {@link #close()} gives the block back to the arena; until then the message counts against
 * nothing but the arena — the sender's credit was returned when the message was taken.
 *
 * <p>The block is a checked one that no thread holds yet: the first thread that reads {@link #data()} takes hold of it
 * (a confined scope). That thread may close it; to keep the message beyond the call — for another thread to read or
 * close — it hands it on first with {@code block().handOff()} (else that thread's close throws
 * {@link WrongThreadException}). Any thread may close a message nobody has read.
 */
public final class InboundMessage implements AutoCloseable {
    private final RdmaSession session;
    private final Block block;
    private final int length;
    private final boolean hasImmediate;
    private final int immediate;
    /** The peer's call id ({@link MessageFrame}), 0 if it expects no reply. */
    private final int callId;
    private boolean replied; // guarded by this

    InboundMessage(RdmaSession session, Block block, int length, boolean hasImmediate, int immediate, int callId) {
        this.session = session;
        this.block = block;
        this.length = length;
        this.hasImmediate = hasImmediate;
        this.immediate = immediate;
        this.callId = callId;
    }

    /** The session it arrived on: where a reply goes. */
    public RdmaSession session() {
        return session;
    }

    /** The block holding the message at its start; its size is the endpoint's maximum message size. */
    public Block block() {
        return block;
    }

    /** The bytes the peer sent. */
    public int length() {
        return length;
    }

    /** The message: the first {@link #length()} bytes of the block. */
    public MemorySegment data() {
        return block.segment().asSlice(0, length);
    }

    /** Whether it was sent with {@link RdmaSession#sendWithImm}. */
    public boolean hasImmediate() {
        return hasImmediate;
    }

    /**
     * The immediate value sent with it (host order).
     *
     * @throws IllegalStateException if it carries none
     */
    public int immediate() {
        if (!hasImmediate) throw new IllegalStateException("this message was sent without immediate data");
        return immediate;
    }

    /** Whether the peer sent it with {@link RdmaSession#callAsync} and waits for a {@link #replyAsync reply}. */
    public boolean isCall() {
        return callId != 0;
    }

    /**
     * Answers this call with the first {@code length} bytes of {@code reply}, which the caller's future receives (and
     * no other caller). The block stays this side's, but must not change until the returned future completes. Sent as a
     * message is: in order with this session's other sends, waiting for a credit if need be.
     *
     * @throws IllegalStateException    if this message is not a call, or was already replied to
     * @throws IllegalArgumentException if {@code length} exceeds the block or the peer's maximum message size
     * @throws FlowControlException     if {@value MessageFlow#MAX_WAITING} sends already wait for credit
     * @throws SessionLostException     if the session has ended
     */
    public CompletableFuture<WorkCompletion> replyAsync(Block reply, int length) {
        return replying(() -> session.reply(callId, reply, length));
    }

    /**
     * Replies with the whole block and waits until it is sent, as {@link RdmaSession#send(Block)} does: at most the
     * request timeout for a credit, then {@link FlowControlException} and nothing is sent (the call may be replied to
     * again).
     */
    public void reply(Block reply) {
        replying(() -> {
            session.replyAndWait(callId, reply);
            return null;
        });
    }

    /** Runs {@code send} as this call's one reply; if it throws, nothing was sent and a reply may be tried again. */
    private <T> T replying(Supplier<T> send) {
        synchronized (this) {
            if (callId == 0) {
                throw new IllegalStateException("this message is not a call: the peer sent it with send, expecting no"
                        + " reply");
            }
            if (replied) throw new IllegalStateException("call " + callId + " was already replied to");
            replied = true;
        }
        try {
            return send.get();
        } catch (RuntimeException e) {
            synchronized (this) {
                replied = false;
            }
            throw e;
        }
    }

    /** Gives the block back to the arena. */
    @Override
    public void close() {
        block.close();
    }

    @Override
    public String toString() {
        return "InboundMessage[" + length + " bytes" + (hasImmediate ? ", imm 0x" + Integer.toHexString(immediate) : "")
                + (callId != 0 ? ", call " + callId : "") + "]";
    }
}
