package io.mooring.benchmarks;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.MemoryRegion;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.soft.SoftProvider;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.WcOpcode;
import java.lang.foreign.Arena;
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
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;

/**
 * The verbs data path on the soft provider's in-JVM loopback (two RC QPs of {@code soft0}): one 64-byte WRITE or READ
 * posted and its completion polled, and one 64-byte SEND with its receive reposted and both completions polled. Requests and
 * completions are reused, as an application on the hot path would: {@code -prof gc} then shows what Mooring's public
 * layer and the provider allocate per post and poll (the goal is 0 B/op), and a profiler the share of each layer.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(1)
@Threads(1)
public class PostPoll {
    private static final int SIZE = 64;
    private static final int RECEIVES = 16;

    /** Two connected QPs, each with its CQ and a registered buffer, and the reusable requests. */
    @State(Scope.Thread)
    public static class Loopback {
        ResourceGraph graph;
        Arena memory;
        CompletionQueue cqA;
        CompletionQueue cqB;
        QueuePair a;
        QueuePair b;
        WorkRequest write;
        WorkRequest read;
        WorkRequest send;
        ReceiveRequest receive;
        final WorkCompletion[] one = {new WorkCompletion()};

        @Setup(Level.Trial)
        public void open() {
            // Platform requester threads: waking a parked virtual one allocates the JDK scheduler's task, which a
            // loaded machine (a poster descheduled past the requester's spin) would show as bytes per post.
            System.setProperty(SoftProvider.PLATFORM_REQUESTERS_PROPERTY, "true");
            graph = ResourceGraph.builder().name("post-poll").build();
            memory = Arena.ofShared();
            DeviceContext context = RdmaDevices.open("soft:soft0", graph);
            ProtectionDomain pd = context.allocateProtectionDomain();
            cqA = context.createCompletionQueue(256);
            cqB = context.createCompletionQueue(256);
            a = pd.createQueuePair(cqA, cqA, QpCapabilities.DEFAULT);
            b = pd.createQueuePair(cqB, cqB, QpCapabilities.DEFAULT);
            var rights = EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ);
            MemoryRegion source = pd.register(memory.allocate(SIZE, 64), rights);
            MemoryRegion target = pd.register(memory.allocate(SIZE, 64), rights);
            var infoA = a.info();
            var infoB = b.info();
            a.connect(infoB);
            b.connect(infoA);
            write = WorkRequest.write(source, 0, SIZE).remote(target.address(), target.rkey());
            read = WorkRequest.read(source, 0, SIZE).remote(target.address(), target.rkey());
            send = WorkRequest.send(source, 0, SIZE);
            receive = ReceiveRequest.into(target, 0, SIZE);
            for (int i = 0; i < RECEIVES; i++) b.post(receive);
        }

        /** Spins until {@code cq} yields a successful completion. */
        WorkCompletion next(CompletionQueue cq) {
            while (cq.poll(one) == 0) Thread.onSpinWait();
            if (!one[0].isSuccess()) throw new IllegalStateException("completion failed: " + one[0]);
            return one[0];
        }

        @TearDown(Level.Trial)
        public void close() {
            graph.close();
            memory.close();
            if (graph.liveCount() != 0) throw new IllegalStateException("left behind:\n" + graph.dump());
        }
    }

    @Benchmark
    public WcOpcode write(Loopback l) {
        l.a.post(l.write);
        return l.next(l.cqA).opcode();
    }

    @Benchmark
    public WcOpcode read(Loopback l) {
        l.a.post(l.read);
        return l.next(l.cqA).opcode();
    }

    @Benchmark
    public WcOpcode sendReceive(Loopback l) {
        l.a.post(l.send);
        l.next(l.cqA);
        WcOpcode received = l.next(l.cqB).opcode();
        l.b.post(l.receive);
        return received;
    }
}
