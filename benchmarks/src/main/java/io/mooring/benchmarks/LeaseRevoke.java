package io.mooring.benchmarks;

import io.mooring.allocator.Block;
import io.mooring.lease.EndReason;
import io.mooring.lease.Lease;
import io.mooring.lease.LeaseLimits;
import io.mooring.lease.LeaseManager;
import io.mooring.verbs.values.Access;
import java.time.Duration;
import java.util.EnumSet;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;

/**
 * Revocation latency at the owner: from ending a lease to its block back in the arena, with access revoked
 * before (when {@code Lease.close()} returns, a write through the old key already fails with REM_ACCESS_ERR).
 * A lease over a 64-byte block is granted before each invocation (not measured) on the session's QP;
 * {@code revoke*} ends it with {@code Lease.close()}. {@code expire1ms} grants with a 1 ms duration and no grace
 * and waits for the expiry's end: its score minus 1 ms is the expiry timer's delay plus the revocation.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(jvmArgsAppend = {"-Djmh.executor=CUSTOM", "-Djmh.executor.class=io.mooring.benchmarks.FastThreadExecutor"})
@Threads(1)
public class LeaseRevoke {
    /** A granted lease per invocation. */
    @State(Scope.Thread)
    public static class Granted {
        Block block;
        Lease lease;

        void grant(LeaseSessions sessions) {
            block = sessions.ownerArena.allocateShared(64, 8);
            lease = sessions.owner.leases().grant(block, Duration.ofSeconds(30), LeaseGrantRelease.WRITE);
        }
    }

    public static class GrantedWindow extends Granted {
        @Setup(Level.Invocation)
        public void grant(LeaseSessions.Window sessions) {
            super.grant(sessions);
        }
    }

    public static class GrantedDedicated extends Granted {
        @Setup(Level.Invocation)
        public void grant(LeaseSessions.Dedicated sessions) {
            super.grant(sessions);
        }
    }

    @Benchmark
    public boolean revokeWindow(GrantedWindow granted) {
        return revoke(granted);
    }

    @Benchmark
    public boolean revokeDedicated(GrantedDedicated granted) {
        return revoke(granted);
    }

    /** Ends the lease (revoked when close returns), then frees the block, as an application would; true if still active. */
    private static boolean revoke(Granted granted) {
        granted.lease.close();
        granted.block.close();
        return granted.lease.isActive();
    }

    /** A manager on the session's QP with no grace, so that a lease ends right at its deadline. */
    @State(Scope.Benchmark)
    public static class NoGrace extends LeaseSessions.Window {
        LeaseManager manager;

        @Override
        void started() {
            var limits = LeaseLimits.builder().maxBytes(1 << 20).maxLeases(16)
                    .maxDuration(Duration.ofSeconds(5)).maxLifetime(Duration.ofSeconds(5))
                    .maxAccess(EnumSet.of(Access.REMOTE_WRITE)).grace(Duration.ZERO).build();
            manager = LeaseManager.create(owner.queuePair(), limits, io.mooring.lease.Isolation.WINDOW);
        }

        @Override
        void stopping() {
            manager.close();
        }
    }

    @Benchmark
    public EndReason expire1ms(NoGrace state) {
        try (Block block = state.ownerArena.allocateShared(64, 8)) {
            return state.manager.grant(block, Duration.ofMillis(1), LeaseGrantRelease.WRITE).ended().join();
        }
    }
}
