package io.mooring.benchmarks;

import io.netty.buffer.AdaptiveByteBufAllocator;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * A Netty 4.2 allocator with its default settings, new per trial and shared by all benchmark threads (each has
 * its own thread cache or magazine on a {@link io.netty.util.concurrent.FastThreadLocalThread}).
 */
@State(Scope.Benchmark)
public abstract class NettyState {
    ByteBufAllocator allocator;

    /** {@code PooledByteBufAllocator}: jemalloc-4 size classes, per-thread caches. */
    public static class Pooled extends NettyState {
        @Override
        ByteBufAllocator create() {
            return new PooledByteBufAllocator(true);
        }
    }

    /**
     * {@code AdaptiveByteBufAllocator}, 4.2's default: size-classed magazines, at its best — with per-thread magazines
     * on every {@code FastThreadLocalThread} ({@code useCacheForNonEventLoopThreads}; with the one-argument
     * constructor only event-loop threads get them, and a JMH worker shares the striped ones).
     */
    public static class Adaptive extends NettyState {
        @Override
        ByteBufAllocator create() {
            return new AdaptiveByteBufAllocator(true, true);
        }
    }

    abstract ByteBufAllocator create();

    @Setup(Level.Trial)
    public void open() {
        Fairness.checkNettyUnsafe();
        allocator = create();
    }
}
