package io.mooring.benchmarks;

import io.mooring.lease.RemoteSegment;
import io.mooring.verbs.values.Access;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Threads;

/**
 * A whole lease, as the requester sees it: {@code requestRemote} (REQUEST → the owner's agent allocates a
 * 64-byte block, exposes it, answers GRANT) then {@code close()} (RELEASE → the owner revokes, gives the block
 * back, answers RELEASE_ACK). Two control round trips over SEND/RECV plus the owner's exposure and revocation:
 * a window bind and invalidation, or a registration and deregistration.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(jvmArgsAppend = {"-Djmh.executor=CUSTOM", "-Djmh.executor.class=io.mooring.benchmarks.FastThreadExecutor"})
@Threads(1)
public class LeaseGrantRelease {
    static final Set<Access> WRITE = EnumSet.of(Access.REMOTE_WRITE);
    static final Duration TERM = Duration.ofSeconds(30);

    @Benchmark
    public long grantReleaseWindow(LeaseSessions.Window sessions) {
        return roundTrip(sessions);
    }

    @Benchmark
    public long grantReleaseDedicated(LeaseSessions.Dedicated sessions) {
        return roundTrip(sessions);
    }

    private static long roundTrip(LeaseSessions sessions) {
        try (RemoteSegment segment = sessions.requester.requestRemote(64, TERM, WRITE)) {
            return segment.leaseId();
        }
    }
}
