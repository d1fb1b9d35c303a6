package io.mooring.netty;

import io.mooring.netty.MooringIoHandler.Transport;
import io.netty.channel.Channel;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoRegistration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * A Mooring channel's registration on a {@link MooringIoHandler}'s event loop, shared by both channel types: the
 * handle, the registration, the {@link Transport} it gives, and how completions reach the loop — at once where the loop
 * delivers them itself, else as tasks, in order either way.
 */
final class LoopPlace {
    private final Channel channel;
    private final MooringIoHandle handle;
    private IoRegistration registration; // the loop's thread
    private MooringIoHandler handler;     // the loop's thread: set at a registration, kept after it
    private volatile Transport transport;  // set at the first registration, kept after it
    /** Completions handed to the loop as tasks and not run yet: one the loop delivers itself queues behind them. */
    private final AtomicInteger queued = new AtomicInteger();

    LoopPlace(Channel channel) {
        this.channel = channel;
        this.handle = new MooringIoHandle(channel);
    }

    /** Whether {@code loop} runs a {@link MooringIoHandler}. */
    static boolean fits(EventLoop loop) {
        return loop instanceof IoEventLoop io && io.isCompatible(MooringIoHandle.class);
    }

    void register(ChannelPromise promise, MooringChannelConfig config) {
        ((IoEventLoop) channel.eventLoop()).register(handle).addListener(f -> {
            if (!f.isSuccess()) {
                promise.setFailure(f.cause());
                return;
            }
            registration = (IoRegistration) f.getNow();
            handler = registration.attachment();
            transport = handler.transport();
            config.useTransport(transport);
            promise.setSuccess();
        });
    }

    void deregister() {
        if (registration != null) registration.cancel();
        registration = null;
    }

    /** What the loop registered on serves: its endpoint and allocator. */
    Transport transport() {
        Transport t = transport;
        if (t == null) throw new IllegalStateException(channel + " is not registered on a MooringIoHandler's loop yet");
        return t;
    }

    /**
     * Starts {@code operation} of the session or listener and hands its outcome to {@code then} on the channel's loop
     * (the failure unwrapped; what the operation throws counts as its failure). If the loop has shut down meanwhile,
     * {@code orphaned} frees the result instead.
     */
    <T> void whenDone(Supplier<CompletableFuture<T>> operation, BiConsumer<T, Throwable> then, Consumer<T> orphaned) {
        CompletableFuture<T> outcome;
        try {
            outcome = operation.get();
        } catch (RuntimeException e) {
            outcome = CompletableFuture.failedFuture(e);
        }
        outcome.whenComplete((result, e) -> execute(
                () -> then.accept(result, e instanceof CompletionException c && c.getCause() != null ? c.getCause() : e),
                () -> {
                    if (result != null) orphaned.accept(result);
                }));
    }

    /**
     * Runs {@code task} on the channel's loop — what a completion's callback calls, never waiting for the loop: at once if
     * the loop delivers that completion from its own poll and none of this channel's is queued (it would overtake them:
     * stream bytes out of order), else as a task. If the loop has shut down, {@code orphaned} frees what the completion
     * brought instead.
     */
    void execute(Runnable task, Runnable orphaned) {
        EventLoop loop = channel.eventLoop();
        if (queued.get() == 0 && loop.inEventLoop() && handler != null && handler.runInline(task)) return;
        queued.incrementAndGet();
        try {
            loop.execute(() -> {
                queued.decrementAndGet();
                task.run();
            });
        } catch (RejectedExecutionException shutDown) {
            queued.decrementAndGet();
            orphaned.run();
        }
    }
}
