package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.soft.SoftInternals;
import io.mooring.verbs.soft.SoftProvider;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.QpCapabilities;
import java.lang.foreign.Arena;
import java.lang.management.ManagementFactory;
import java.util.EnumSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Posting and polling allocate nothing (issue 10), neither on the poster's thread nor on the soft NIC's requester
 * thread, whether the requester is awake when a request comes or has to be woken: 64-byte WRITEs, READs and SENDs
 * between two QPs of soft0's in-JVM loopback, counted by the JVM's per-thread allocation counters after a warm-up that
 * lets the JIT and the first use of every class allocate what they do once. The requesters are platform threads
 * ({@code mooring.soft.platformRequesters}): waking a virtual one allocates the JDK scheduler's task.
 */
@Timeout(120)
class PostPollAllocationTest {
    private static final int SIZE = 64;
    private static final int WARM_UP = 20_000;
    private static final int ROUNDS = 100_000;
    /** Rounds measured at a stretch: short enough that the requester's thread rarely ends within one. */
    private static final int BLOCK = 10_000;
    /** Rounds in which the requester is parked when the request is posted, so each one wakes it. */
    private static final int WAKE_UPS = 2_000;
    /** Bytes allowed for a whole run (a late compilation, a rare queue node of a contended lock): far under 16 each. */
    private static final long TOLERANCE = 16 * 1024;

    private final ResourceGraph graph = ResourceGraph.builder().name("post-poll-allocation").build();
    private final Arena memory = Arena.ofShared();
    private final WorkCompletion[] one = {new WorkCompletion()};
    private CompletionQueue cqA;
    private CompletionQueue cqB;
    private QueuePair a;
    private QueuePair b;
    private WorkRequest write;
    private WorkRequest read;
    private WorkRequest send;
    private ReceiveRequest receive;
    private Thread requester; // the soft NIC's thread executing a's send queue, during a measurement

    @BeforeEach
    void connect() {
        System.setProperty(SoftProvider.PLATFORM_REQUESTERS_PROPERTY, "true"); // read as each QP is created
        DeviceContext context = RdmaDevices.open("soft:soft0", graph);
        // Key indexes past the small Integers the JVM caches: a key lookup that boxed its index would allocate.
        SoftInternals.restartKeyIndexesAt("soft0", 1 << 16);
        ProtectionDomain pd = context.allocateProtectionDomain();
        cqA = context.createCompletionQueue(64);
        cqB = context.createCompletionQueue(64);
        a = pd.createQueuePair(cqA, cqA, QpCapabilities.DEFAULT);
        b = pd.createQueuePair(cqB, cqB, QpCapabilities.DEFAULT);
        var rights = EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ);
        MemoryRegion source = pd.register(memory.allocate(SIZE, 64), rights);
        MemoryRegion target = pd.register(memory.allocate(SIZE, 64), rights);
        QpInfo infoA = a.info();
        QpInfo infoB = b.info();
        a.connect(infoB);
        b.connect(infoA);
        write = WorkRequest.write(source, 0, SIZE).remote(target.address(), target.rkey());
        read = WorkRequest.read(source, 0, SIZE).remote(target.address(), target.rkey());
        send = WorkRequest.send(source, 0, SIZE);
        receive = ReceiveRequest.into(target, 0, SIZE);
    }

    @AfterEach
    void close() {
        System.clearProperty(SoftProvider.PLATFORM_REQUESTERS_PROPERTY);
        graph.close();
        memory.close();
        assertEquals(0, graph.liveCount(), graph::dump);
    }

    @Test
    void aWritePostedAndPolledAllocatesNothing() {
        assertAllocationFree(ROUNDS, false, this::writeRound);
    }

    @Test
    void aReadPostedAndPolledAllocatesNothing() {
        assertAllocationFree(ROUNDS, false, this::readRound);
    }

    @Test
    void aSendPostedAndBothCompletionsPolledAllocateNothing() {
        for (int i = 0; i < 16; i++) b.post(receive);
        assertAllocationFree(ROUNDS, false, this::sendRound);
    }

    /**
     * A type 2 window bound over a region and invalidated again, each request posted and polled: the bind's ticket,
     * the invalidation's, the window's new key and binding (its PD's table of keys) are all reused, not allocated.
     * The invalidations are built ahead, one per key a bind can give the window (its low 8 bits count the binds).
     */
    @Test
    void bindingAndInvalidatingAWindowAllocatesNothing() {
        var rights = EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.MW_BIND);
        MemoryRegion region = a.pd().register(memory.allocate(SIZE, 64), rights);
        MemoryWindow window = a.pd().allocateWindow(MwType.TYPE_2);
        WorkRequest bind = WorkRequest.bind(window, region, 0, SIZE, EnumSet.of(Access.REMOTE_WRITE));
        WorkRequest[] invalidations = new WorkRequest[256];
        for (int i = 0; i < invalidations.length; i++) {
            invalidations[i] = WorkRequest.invalidate(window.rkey() & 0xffff_ff00 | i);
        }
        assertAllocationFree(ROUNDS, false, () -> {
            a.post(bind);
            next(cqA);
            a.post(invalidations[window.rkey() & 0xff]);
            next(cqA);
        });
        assertFalse(window.isBound());
    }

    @Test
    void wakingAParkedRequesterAllocatesNothing() {
        assertAllocationFree(WAKE_UPS, true, this::writeRound);
    }

    private void writeRound() {
        a.post(write);
        next(cqA);
    }

    private void readRound() {
        a.post(read);
        next(cqA);
    }

    private void sendRound() {
        a.post(send);
        next(cqA);
        next(cqB);
        b.post(receive);
    }

    /**
     * Runs {@code round} for the warm-up, then {@code rounds} times counted, in blocks of {@link #BLOCK}; with
     * {@code parked}, each counted round starts only once the requester has parked (it spins a while after its last
     * request first). A block during which the requester's thread ended (a pause of 100 ms between two rounds, which a
     * loaded host makes now and then: a new thread did part of the work) does not count and is run again.
     */
    private void assertAllocationFree(int rounds, boolean parked, Runnable round) {
        for (int i = 0; i < WARM_UP; i++) round.run();
        Thread poster = Thread.currentThread();
        long posterBytes = 0;
        long requesterBytes = 0;
        int voided = 0;
        for (int counted = 0; counted < rounds; ) {
            int block = Math.min(BLOCK, rounds - counted);
            requester = requesterThread(round);
            long posterBefore = allocated(poster);
            long requesterBefore = allocated(requester);
            for (int i = 0; i < block; i++) {
                if (parked) awaitParked();
                round.run();
            }
            long posterBlock = allocated(poster) - posterBefore;
            long requesterBlock = allocated(requester) - requesterBefore;
            if (!requester.isAlive()) {
                assertTrue(++voided < 20, "the requester's thread ended during 20 blocks of " + block + " rounds");
                continue;
            }
            posterBytes += posterBlock;
            requesterBytes += requesterBlock;
            counted += block;
        }
        long posterTotal = posterBytes;
        long requesterTotal = requesterBytes;
        assertTrue(posterTotal <= TOLERANCE, () -> "the poster allocated " + posterTotal + " bytes in " + rounds
                + " rounds, over the tolerance of " + TOLERANCE);
        assertTrue(requesterTotal <= TOLERANCE, () -> "the requester allocated " + requesterTotal + " bytes in "
                + rounds + " rounds, over the tolerance of " + TOLERANCE);
    }

    /**
     * The platform thread that executes a's send queue, found right after a round (idle 100 ms, it ends; looking
     * for it can take that long on a loaded host, so it is looked for again after another round).
     */
    private Thread requesterThread(Runnable round) {
        String name = "soft-qp-" + a.number();
        for (int attempt = 0; attempt < 50; attempt++) {
            round.run();
            var found = Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.getName().equals(name) && t.isAlive()).findFirst();
            if (found.isPresent()) return found.get();
        }
        throw new AssertionError("no platform thread " + name + " executes the send queue");
    }

    private void awaitParked() {
        // parked until work or idle; ended, the attempt is void
        while (requester.getState() != Thread.State.TIMED_WAITING && requester.isAlive()) Thread.onSpinWait();
    }

    private void next(CompletionQueue cq) {
        while (cq.poll(one) == 0) Thread.onSpinWait();
        if (!one[0].isSuccess()) throw new AssertionError("completion failed: " + one[0]); // no message built per round
    }

    private static long allocated(Thread t) {
        var threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        return threads.getThreadAllocatedBytes(t.threadId());
    }
}
