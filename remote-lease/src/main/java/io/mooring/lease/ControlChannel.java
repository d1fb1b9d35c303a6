package io.mooring.lease;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * The agent's messages over the session's QP: SENDs from a small pool of send buffers, and receives
 * pre-posted into buffers from the arena, reposted as soon as a message has been copied out. Buffers are
 * shared-scope blocks: they are written and read by the dispatcher and agent threads, not by the thread that
 * allocated them.
 */
final class ControlChannel implements AutoCloseable {
    static final int RECEIVES = 16;
    private static final int SENDS = 16;

    private final QueuePair qp;
    private final List<Block> receiveBuffers = new ArrayList<>();
    private final BlockingQueue<Block> sendBuffers = new ArrayBlockingQueue<>(SENDS);
    private final List<Block> allSendBuffers = new ArrayList<>();

    /** @throws RuntimeException if the arena cannot serve the buffers (memlock): none is kept then */
    ControlChannel(QueuePair qp, RdmaArena arena) {
        this.qp = qp;
        try {
            for (int i = 0; i < RECEIVES; i++) receiveBuffers.add(arena.allocateShared(MessageCodec.MAX_MESSAGE, 8));
            for (int i = 0; i < SENDS; i++) {
                Block b = arena.allocateShared(MessageCodec.MAX_MESSAGE, 8);
                allSendBuffers.add(b);
                sendBuffers.add(b);
            }
        } catch (RuntimeException | OutOfMemoryError e) {
            close();
            throw e;
        }
    }

    /** Posts every receive buffer; their completions go to the CQ's dispatcher handler. */
    void start() {
        for (int i = 0; i < RECEIVES; i++) repost(i);
    }

    private void repost(int slot) {
        Block b = receiveBuffers.get(slot);
        qp.post(ReceiveRequest.into(b.region(), b.regionOffset(), MessageCodec.MAX_MESSAGE).wrId(slot));
    }

    /**
     * Handles a completion the dispatcher handed over (everything but this side's SENDs, which have futures):
     * a received message is copied out, its buffer reposted, and the bytes given to {@code onMessage}; a failed
     * receive (flushed: the QP broke) goes to {@code onFailure}.
     */
    void onCompletion(WorkCompletion wc, Consumer<MemorySegment> onMessage, BiConsumer<String, WorkCompletion> onFailure) {
        if (!wc.opcode().isReceive()) return;
        if (!wc.isSuccess()) {
            onFailure.accept("a control receive completed with " + wc.status(), wc);
            return;
        }
        int slot = (int) wc.wrId();
        MemorySegment copy = MemorySegment.ofArray(
                receiveBuffers.get(slot).segment().asSlice(0, wc.byteLength()).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
        try {
            repost(slot);
        } catch (RuntimeException e) {
            onFailure.accept("reposting a control receive failed: " + e.getMessage(), wc);
        }
        onMessage.accept(copy);
    }

    /** Encodes and SENDs {@code m}; the future completes when the send completed. */
    CompletableFuture<WorkCompletion> send(Message m) {
        Block b;
        try {
            b = sendBuffers.poll(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return CompletableFuture.failedFuture(e);
        }
        if (b == null) return CompletableFuture.failedFuture(new IllegalStateException("no control send buffer freed up in 10 s"));
        int length = MessageCodec.encode(m, b.segment());
        try {
            return qp.postAsync(WorkRequest.send(b.region(), b.regionOffset(), length))
                    .whenComplete((wc, e) -> sendBuffers.add(b));
        } catch (RuntimeException e) {
            sendBuffers.add(b);
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Frees the buffers; call after the QP is destroyed (nothing posted may be in flight). */
    @Override
    public void close() {
        receiveBuffers.forEach(Block::close);
        allSendBuffers.forEach(Block::close);
    }
}
