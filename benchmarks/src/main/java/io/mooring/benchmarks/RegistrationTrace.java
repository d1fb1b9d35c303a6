package io.mooring.benchmarks;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.regcache.EvictionPolicy;
import io.mooring.regcache.Registration;
import io.mooring.regcache.RegistrationCache;
import io.mooring.regcache.RegistrationCacheStats;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The registration cache's eviction policies on the trace a storage engine makes: reads of a hot set of buffers,
 * Zipf-distributed, interrupted now and then by a sequential scan (a compaction, a backup) through more cold
 * buffers than the cache holds. Each policy replays the same trace on a soft-provider PD in the same JVM, in
 * alternating rounds after one warm-up round each. Run as
 * {@code java --enable-native-access=ALL-UNNAMED -cp benchmarks/target/benchmarks.jar
 * io.mooring.benchmarks.RegistrationTrace [ROUNDS]}.
 *
 * <p>Printed per policy (the median round): registrations per 1,000 acquires, overall and on the hot set; wall
 * and CPU time per acquire (CPU of the whole process, so the policy's eviction thread counts); and the time a real
 * NIC would add for those registrations by UCX's model (16 µs + 0.06 ns per byte).
 */
public final class RegistrationTrace {
    static final long SEED = 20_261_128L;
    static final int BUFFER = 16 << 10;
    /** The hot-set sizes run: three quarters of the cache, and four times the cache. */
    static final int[] HOT = {768, 4096};
    static final int MAX_HOT = 4096;
    static final int COLD = 2048;
    static final int CACHED = 1024;
    static final double ZIPF = 0.99;
    static final int ACQUIRES = 100_000;
    static final int SCAN_EVERY = 12_500;
    static final double REGISTER_NS = 16_000 + 0.06 * BUFFER;
    /** Where the keys read go, so that the JIT cannot drop the reads. */
    static volatile int sink;

    /**
     * Buffer indexes in acquire order: below {@link #MAX_HOT} the hot set (of {@code hot} buffers), from there the
     * scanned cold buffers, the same ones in every scan (a periodic backup of the same files).
     */
    static int[] trace(int hot) {
        var random = new SplittableRandom(SEED);
        double[] cdf = new double[hot];
        double sum = 0;
        for (int i = 0; i < hot; i++) cdf[i] = sum += 1 / Math.pow(i + 1, ZIPF);
        // A random rank per buffer, so that the hot ones are spread over the memory rather than first.
        int[] bufferOfRank = new int[hot];
        for (int i = 0; i < hot; i++) bufferOfRank[i] = i;
        for (int i = hot - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int t = bufferOfRank[i];
            bufferOfRank[i] = bufferOfRank[j];
            bufferOfRank[j] = t;
        }
        int[] trace = new int[ACQUIRES];
        int n = 0;
        while (n < ACQUIRES) {
            if (n > 0 && n % SCAN_EVERY == 0) {
                for (int c = 0; c < COLD && n < ACQUIRES; c++) trace[n++] = MAX_HOT + c;
            }
            int rank = Arrays.binarySearch(cdf, random.nextDouble() * sum);
            trace[n++] = bufferOfRank[rank < 0 ? -rank - 1 : rank];
        }
        return trace;
    }

    /** One replay of the trace with one policy. */
    record Round(EvictionPolicy policy, long acquires, long hotAcquires, long registrations, long hotRegistrations,
                 long evictions, long wallNanos, long cpuNanos) {
        double perThousand() {
            return 1000.0 * registrations / acquires;
        }

        double hotPerThousand() {
            return 1000.0 * hotRegistrations / hotAcquires;
        }

        double wallPerAcquire() {
            return (double) wallNanos / acquires;
        }

        double cpuPerAcquire() {
            return (double) cpuNanos / acquires;
        }

        double modelledPerAcquire() {
            return wallPerAcquire() + REGISTER_NS * registrations / acquires;
        }
    }

    static Round replay(EvictionPolicy policy, int[] trace, ProtectionDomain pd, MemorySegment memory) {
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        MemorySegment[] buffers = new MemorySegment[MAX_HOT + COLD];
        for (int i = 0; i < buffers.length; i++) buffers[i] = memory.asSlice((long) i * BUFFER, BUFFER);
        long hotAcquires = 0;
        long hotMisses = 0;
        int keys = 0;
        RegistrationCacheStats stats;
        long cpu0 = os.getProcessCpuTime();
        long wall0 = System.nanoTime();
        long wall;
        try (RegistrationCache cache = RegistrationCache.builder(pd).eviction(policy).name(policy.name())
                .maxCachedCount(CACHED).maxCachedBytes((long) CACHED * BUFFER).build()) {
            // The misses are read where the trace turns from hot to scan and back: reading them per acquire would
            // take the cache's lock each time.
            boolean inHotSet = true;
            long missesAtTurn = 0;
            for (int b : trace) {
                boolean hot = b < MAX_HOT;
                if (hot != inHotSet) {
                    long misses = cache.stats().misses();
                    if (inHotSet) hotMisses += misses - missesAtTurn;
                    missesAtTurn = misses;
                    inHotSet = hot;
                }
                if (hot) hotAcquires++;
                try (Registration reg = cache.acquire(buffers[b])) {
                    keys += reg.lkey(); // what a work request reads
                }
            }
            wall = System.nanoTime() - wall0;
            stats = cache.stats();
            if (inHotSet) hotMisses += stats.misses() - missesAtTurn;
        }
        long cpu = os.getProcessCpuTime() - cpu0;
        sink = keys;
        return new Round(policy, trace.length, hotAcquires, stats.misses(), hotMisses, stats.evictions(), wall, cpu);
    }

    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        run(rounds, System.out);
    }

    static void run(int rounds, PrintStream out) {
        EvictionPolicy[] policies = {EvictionPolicy.LEAST_RECENTLY_USED, EvictionPolicy.FREQUENCY};
        out.printf(Locale.ROOT, "trace: %,d acquires of %d KiB buffers, Zipf(%.2f) over the hot set, a scan of %,d "
                + "cold ones every %,d; cache bounds %,d regions / %,d KiB; median of %d rounds%n", ACQUIRES,
                BUFFER >> 10, ZIPF, COLD, SCAN_EVERY, CACHED, (long) CACHED * BUFFER >> 10, rounds);
        out.println("| hot set | policy | registrations / 1,000 acquires | of hot-set acquires | evictions "
                + "| wall µs / acquire | CPU µs / acquire | + 16 µs + 0.06 ns/B per registration |");
        out.println("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |");
        try (ResourceGraph graph = ResourceGraph.builder().name("trace").build();
             Arena arena = Arena.ofShared()) {
            ProtectionDomain pd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
            MemorySegment memory = arena.allocate((long) (MAX_HOT + COLD) * BUFFER, BUFFER);
            for (int hot : HOT) {
                int[] trace = trace(hot);
                List<List<Round>> results = new ArrayList<>();
                for (EvictionPolicy ignored : policies) results.add(new ArrayList<>());
                for (int round = -1; round < rounds; round++) { // round -1 warms the JIT up
                    for (int p = 0; p < policies.length; p++) {
                        Round r = replay(policies[p], trace, pd, memory);
                        if (round >= 0) results.get(p).add(r);
                    }
                }
                for (List<Round> list : results) {
                    Round r = median(list);
                    out.printf(Locale.ROOT, "| %,d | %s | %.1f | %.1f | %,d | %.1f | %.1f | %.1f |%n", hot, r.policy(),
                            r.perThousand(), r.hotPerThousand(), r.evictions(), r.wallPerAcquire() / 1000,
                            r.cpuPerAcquire() / 1000, r.modelledPerAcquire() / 1000);
                }
            }
        }
    }

    /** The round of median wall time; registrations do not vary between rounds (one thread, one trace). */
    private static Round median(List<Round> rounds) {
        List<Round> sorted = new ArrayList<>(rounds);
        sorted.sort((a, b) -> Long.compare(a.wallNanos(), b.wallNanos()));
        return sorted.get(sorted.size() / 2);
    }
}
