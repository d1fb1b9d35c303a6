package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceState;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.SharedReceiveQueue;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.values.SrqAttributes;

/**
 * The endpoint's receives for application messages: one shared receive queue that every session's data QP takes
 * from, so a server with hundreds of peers posts receives once, not once per connection. It holds a window of
 * receives per live session — grown as sessions come, never shrunk (a posted receive cannot be taken back) — each
 * into an arena block of the message size. A message is handed on as the very block it arrived in, and a fresh block
 * takes its slot at once; the credits of {@link MessageFlow} keep every peer within its window, so the queue never
 * runs empty under conforming peers.
 */
final class MessageReceives implements AutoCloseable {
    private final SharedReceiveQueue srq;
    private final RdmaArena arena;
    private final int messageSize;
    private final Block[] blocks; // by slot, the receive's wrId; touched by the dispatcher, grown under this
    private int posted;           // slots in use, guarded by this
    /** Filled afresh for each post, guarded by this: the queue copies a request as it is posted. */
    private final ReceiveRequest request = new ReceiveRequest();

    MessageReceives(ProtectionDomain pd, RdmaArena arena, int messageSize, int capacity) {
        this.srq = pd.createSharedReceiveQueue(SrqAttributes.builder().maxWr(capacity).build());
        this.arena = arena;
        this.messageSize = messageSize;
        this.blocks = new Block[capacity];
    }

    SharedReceiveQueue queue() {
        return srq;
    }

    /**
     * Posts receives until {@code total} are in use.
     *
     * @throws RuntimeException if the arena cannot serve a block (memlock): those posted so far stay
     */
    synchronized void grow(int total) {
        for (; posted < Math.min(total, blocks.length); posted++) {
            blocks[posted] = receiveBlock();
            repost(posted);
        }
    }

    /** Receive blocks in use: posted, or filled and not yet replaced. */
    synchronized int posted() {
        return posted;
    }

    /** Posts slot {@code slot}'s block again: its receive carried no data (a WRITE with immediate) or was flushed. */
    synchronized void repost(int slot) {
        Block b = blocks[slot];
        srq.post(request.reset().local(b.region(), b.regionOffset(), messageSize).wrId(slot));
    }

    /**
     * The block a successful receive filled, now the caller's; a fresh block takes its slot.
     *
     * @throws RuntimeException if the arena cannot serve the fresh block: the slot stays empty
     */
    Block take(WorkCompletion wc) {
        int slot = (int) wc.wrId();
        Block filled = blocks[slot];
        blocks[slot] = receiveBlock();
        repost(slot);
        return filled;
    }

    /**
     * A checked block handed off at once: the first thread that reads the message takes hold of it with a confined
     * scope; unless that thread holds it, any thread may close it. No shared scope, whose close is a handshake with
     * every thread (tens of microseconds, far more on a loaded machine) on the path of every message.
     */
    private Block receiveBlock() {
        Block b = arena.allocate(messageSize, 8);
        b.handOff();
        return b;
    }

    /**
     * Destroys the queue and frees its blocks; call once no QP uses it. If a QP still holds the queue (its destroy
     * waits for that QP), the blocks stay out of the arena: a receive still posted into them may yet be written.
     */
    @Override
    public synchronized void close() {
        srq.close();
        if (srq.resource().state() != ResourceState.DESTROYED) {
            System.getLogger(MessageReceives.class.getName()).log(System.Logger.Level.WARNING, srq + " outlives the "
                    + "endpoint (a QP still uses it): its " + posted + " receive blocks are not given back");
            return;
        }
        for (int i = 0; i < posted; i++) if (blocks[i] != null && blocks[i].isOpen()) blocks[i].close();
    }
}
