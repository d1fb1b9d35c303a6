package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.QpCapabilities;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;

/** One side of a test connection: a device context, a PD, one CQ, one RC QP and native memory. */
final class Endpoint {
    static final Duration WAIT = Duration.ofSeconds(20);

    final DeviceContext context;
    final ProtectionDomain pd;
    final CompletionQueue cq;
    final QueuePair qp;
    private final Arena arena;

    Endpoint(DeviceContext context, Arena arena, QpCapabilities capabilities) {
        this.context = context;
        this.arena = arena;
        this.pd = context.allocateProtectionDomain();
        this.cq = context.createCompletionQueue(1024);
        this.qp = pd.createQueuePair(cq, cq, capabilities);
    }

    /** Connects the QPs of {@code a} and {@code b} to each other. */
    static void connect(Endpoint a, Endpoint b, ConnectOptions options) {
        QpInfo ia = a.qp.info(options);
        QpInfo ib = b.qp.info(options);
        a.qp.connect(ib, options);
        b.qp.connect(ia, options);
    }

    /** Registers {@code size} bytes, filled with {@code fill}, with the given rights. */
    MemoryRegion region(long size, int fill, Access... rights) {
        MemorySegment memory = arena.allocate(size, 64);
        memory.fill((byte) fill);
        return pd.register(memory, rights.length == 0 ? EnumSet.noneOf(Access.class) : EnumSet.copyOf(List.of(rights)));
    }

    /** A region every right allows (local write, remote read/write/atomic, window bind). */
    MemoryRegion open(long size, int fill) {
        return region(size, fill, Access.values());
    }

    /** The next completion; fails the test if none arrives in time. */
    WorkCompletion next() {
        return next(cq);
    }

    /** The next completion on {@code cq} for the caller; fails the test if none arrives in time. */
    static WorkCompletion next(CompletionQueue cq) {
        WorkCompletion[] one = {new WorkCompletion()};
        long deadline = System.nanoTime() + WAIT.toNanos();
        try {
            while (System.nanoTime() < deadline) {
                if (cq.poll(one, Duration.ofMillis(100)) == 1) return one[0].copy();
            }
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
        throw new AssertionError("no completion on " + cq + " within " + WAIT);
    }

    /** The next completion, which must have {@code status}. */
    WorkCompletion expect(WcStatus status) {
        WorkCompletion wc = next();
        assertEquals(status, wc.status(), wc::toString);
        return wc;
    }

    /** Asserts that no completion is waiting. */
    void expectNothing() {
        WorkCompletion[] one = {new WorkCompletion()};
        assertEquals(0, cq.poll(one), () -> "unexpected " + one[0]);
    }
}
