package io.mooring.lease;

import io.mooring.allocator.Block;
import java.lang.foreign.MemorySegment;

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

    InboundMessage(RdmaSession session, Block block, int length, boolean hasImmediate, int immediate) {
        this.session = session;
        this.block = block;
        this.length = length;
        this.hasImmediate = hasImmediate;
        this.immediate = immediate;
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

    /** Gives the block back to the arena. */
    @Override
    public void close() {
        block.close();
    }

    @Override
    public String toString() {
        return "InboundMessage[" + length + " bytes" + (hasImmediate ? ", imm 0x" + Integer.toHexString(immediate) : "")
                + "]";
    }
}
