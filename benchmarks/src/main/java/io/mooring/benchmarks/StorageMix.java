package io.mooring.benchmarks;

import java.util.SplittableRandom;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;

/**
 * A storage engine's mix, 4096 buffers live ({@link LiveRing}): 70% of requests 64–512 B (keys, small values,
 * headers), 25% 4–16 KiB (pages), 5% 64 KiB–1 MiB (large values, compaction buffers), drawn once from a fixed seed,
 * so every allocator sees the same sequence.
 */
@State(Scope.Thread)
public class StorageMix extends LiveRingBenchmark {
    private static final int[] SIZES = sizes(1 << 16, 42);
    private int next;

    public StorageMix() {
        super(4096);
    }

    static int[] sizes(int n, long seed) {
        var random = new SplittableRandom(seed);
        int[] sizes = new int[n];
        for (int i = 0; i < n; i++) {
            int p = random.nextInt(100);
            sizes[i] = p < 70 ? random.nextInt(64, 513)
                    : p < 95 ? random.nextInt(4 << 10, (16 << 10) + 1)
                    : random.nextInt(64 << 10, (1 << 20) + 1);
        }
        return sizes;
    }

    @Override
    int nextSize() {
        return SIZES[next++ & (SIZES.length - 1)];
    }
}
