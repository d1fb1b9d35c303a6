package io.mooring.benchmarks;

import io.mooring.allocator.Block;
import io.mooring.lease.RemoteSegment;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;

/**
 * A 64-byte RDMA WRITE into a leased block, waited for: through {@link RemoteSegment#write} (which checks that
 * the segment is open, the session alive, the lease not revoked, the local deadline not passed, the right and the
 * bounds, before posting) and as a plain {@code postAsync} of the same WRITE (same QP, same key, same address,
 * same source) with no check. The difference is what the lease costs the requester per operation; the owner's
 * window costs nothing per access.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(jvmArgsAppend = {"-Djmh.executor=CUSTOM", "-Djmh.executor.class=io.mooring.benchmarks.FastThreadExecutor"})
@Threads(1)
public class LeaseWrite {
    /** One lease for the whole trial (renewable far beyond it) and a 64-byte source block. */
    @State(Scope.Benchmark)
    public static class Leased extends LeaseSessions.Window {
        RemoteSegment segment;
        Block source;

        @Override
        void started() {
            segment = requester.requestRemote(64, Duration.ofMinutes(5), LeaseGrantRelease.WRITE);
            source = requesterArena.allocateShared(64, 8);
            source.segment().fill((byte) 0x2a);
        }

        @Override
        void stopping() {
            segment.close();
            source.close();
        }
    }

    @Benchmark
    public void rdmaWrite(Leased leased) {
        Block src = leased.source;
        WorkCompletion wc = leased.requester.queuePair().postAsync(WorkRequest.write(src.region(), src.regionOffset(), 64)
                .remote(leased.segment.address(), leased.segment.rkey())).join();
        if (!wc.isSuccess()) throw new IllegalStateException("plain write: " + wc.status());
    }

    @Benchmark
    public void rdmaWriteLeased(Leased leased) {
        leased.segment.write(leased.source, 0);
    }
}
