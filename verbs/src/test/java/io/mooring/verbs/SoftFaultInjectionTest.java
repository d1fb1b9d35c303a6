package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.soft.SoftInternals;
import io.mooring.verbs.testing.FaultInjection;
import io.mooring.verbs.testing.FaultPlan.Fault;
import io.mooring.verbs.testing.FaultPlan;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.QpState;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Each fault the soft fabric injects, and the effect a NIC shows under it: requests complete with the statuses
 * IBTA gives, WRITEs, SENDs and atomics execute exactly once, memory holds exactly the bytes it should. Requester
 * {@code a} is on soft0; responder {@code b} on soft0 (in-JVM link) or soft1 (TCP). What reached the responder is
 * counted by the accesses it made to its regions ({@link SoftInternals#onAdmittedAccess}).
 */
class SoftFaultInjectionTest {
    /** ACK timeout 4.2 ms, retry_cnt 2, rnr_retry 7. */
    private static final ConnectOptions FAST = VerbsConformance.FAST;
    private static final long ACK_TIMEOUT_NANOS = FAST.ackTimeout().toNanos();
    private static final int SIZE = 4096;

    private ResourceGraph graph;
    private Arena arena;
    private String responderDevice;
    private Endpoint a;
    private Endpoint b;

    private void open(String device) {
        open(device, FAST);
    }

    private void open(String device, ConnectOptions options) {
        graph = ResourceGraph.builder().name(getClass().getSimpleName()).build();
        arena = Arena.ofShared();
        responderDevice = device;
        a = new Endpoint(RdmaDevices.open("soft:soft0", graph), arena, QpCapabilities.DEFAULT);
        b = new Endpoint(RdmaDevices.open("soft:" + device, graph), arena, QpCapabilities.DEFAULT);
        Endpoint.connect(a, b, options);
    }

    @AfterEach
    void teardown() {
        if (graph == null) return;
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
        arena.close();
        graph = null;
    }

    // ---- one fault, every operation -------------------------------------------------------------------------

    /**
     * The first packet of each operation suffers {@code fault}. Every operation completes, memory is exact, and a
     * WRITE, an atomic and a SEND execute once; a READ reaches the responder {@code readAccesses} times (a lost
     * answer, a duplicate or a late copy is served again, as a NIC serves a duplicate READ).
     *
     * @param packets what each operation takes: a packet the responder never answered in time is retransmitted
     *                after the ACK timeout
     */
    @ParameterizedTest(name = "{0} over {1}")
    @CsvSource({"DROP_REQUEST, soft0, 2, 1", "DROP_REQUEST, soft1, 2, 1", "CORRUPT, soft0, 2, 1", "CORRUPT, soft1, 2, 1",
        "DROP_RESPONSE, soft0, 2, 2", "DROP_RESPONSE, soft1, 2, 2", "DUPLICATE, soft0, 1, 2", "DUPLICATE, soft1, 1, 2",
        "REORDER, soft0, 2, 2", "REORDER, soft1, 2, 2", "DELAY, soft0, 1, 1", "DELAY, soft1, 1, 1"})
    void everyOperationCompletesOnceUnderEachFault(Fault fault, String device, int packets, int readAccesses) {
        open(device);
        Duration delay = Duration.ofMillis(2); // shorter than the ACK timeout: the answer comes in time, later
        FaultPlan plan = FaultPlan.seeded(1).delay(0, delay).at(1, fault);
        long minNanos = switch (fault) {
            case DELAY -> delay.toNanos();
            case DUPLICATE -> 0;
            default -> ACK_TIMEOUT_NANOS;
        };
        assertAll(plan, fault, packets, minNanos, this::write, 1);
        assertAll(plan, fault, packets, minNanos, this::read, readAccesses);
        assertAll(plan, fault, packets, minNanos, this::fetchAndAdd, 1);
        assertAll(plan, fault, packets, minNanos, this::send, 1);
    }

    /** A delay of at least the ACK timeout makes the packet late: retransmitted first, the late copy a duplicate. */
    @ParameterizedTest
    @ValueSource(strings = {"soft0", "soft1"})
    void aPacketDelayedPastTheAckTimeoutIsRetransmittedAndExecutedOnce(String device) {
        open(device);
        FaultPlan plan = FaultPlan.seeded(1).delay(0, Duration.ofMillis(50)).at(1, Fault.DELAY);
        assertAll(plan, Fault.DELAY, 2, ACK_TIMEOUT_NANOS, this::write, 1);
        assertAll(plan, Fault.DELAY, 2, ACK_TIMEOUT_NANOS, this::read, 2);
        assertAll(plan, Fault.DELAY, 2, ACK_TIMEOUT_NANOS, this::fetchAndAdd, 1);
        assertAll(plan, Fault.DELAY, 2, ACK_TIMEOUT_NANOS, this::send, 1);
    }

    /** An operation that checks its own effect on memory and returns how often it reached the responder. */
    private interface Operation {
        int run();
    }

    private void assertAll(FaultPlan plan, Fault fault, int packets, long minNanos, Operation operation,
                           int accesses) {
        long start = System.nanoTime();
        int reached;
        FaultInjection.Counts counts;
        try (var faults = a.qp.injectFaults(plan)) {
            reached = operation.run();
            counts = faults.counts();
        }
        long took = System.nanoTime() - start;
        assertEquals(accesses, reached, "times the operation reached the responder's memory");
        assertEquals(packets, counts.packets(), counts::toString);
        for (Fault f : Fault.values()) assertEquals(f == fault ? 1 : 0, counts.of(f), f + " in " + counts);
        assertTrue(took >= minNanos, "completed after " + took + " ns, before the fault's " + minNanos + " ns");
    }

    private int write() {
        MemoryRegion src = a.open(SIZE, 0);
        pattern(src.segment(), 1);
        MemoryRegion dst = b.open(SIZE, 0);
        var reached = accesses(dst);
        a.qp.post(WorkRequest.write(src, 0, SIZE).remote(dst.address(), dst.rkey()).wrId(1));
        assertEquals(1, a.expect(WcStatus.SUCCESS).wrId());
        assertEquals(-1, src.segment().mismatch(dst.segment()), "the written bytes");
        return reached.get();
    }

    private int read() {
        MemoryRegion src = b.open(SIZE, 0);
        pattern(src.segment(), 2);
        MemoryRegion back = a.open(SIZE, 0);
        var reached = accesses(src);
        a.qp.post(WorkRequest.read(back, 0, SIZE).remote(src.address(), src.rkey()).wrId(2));
        WorkCompletion wc = a.expect(WcStatus.SUCCESS);
        assertEquals(SIZE, wc.byteLength());
        assertEquals(-1, src.segment().mismatch(back.segment()), "the bytes read");
        return reached.get();
    }

    private int fetchAndAdd() {
        MemoryRegion target = b.open(Long.BYTES, 0);
        target.segment().set(ValueLayout.JAVA_LONG, 0, 100);
        MemoryRegion result = a.open(Long.BYTES, 0);
        var reached = accesses(target);
        a.qp.post(WorkRequest.fetchAndAdd(result, 0, target.address(), target.rkey(), 5).wrId(3));
        assertEquals(3, a.expect(WcStatus.SUCCESS).wrId());
        assertEquals(100, result.segment().get(ValueLayout.JAVA_LONG, 0), "the original value, replayed if need be");
        assertEquals(105, target.segment().get(ValueLayout.JAVA_LONG, 0), "added exactly once");
        return reached.get();
    }

    /** A SEND with a spare receive posted behind the one it fills: a second execution would fill the spare. */
    private int send() {
        MemoryRegion out = a.open(64, 0);
        pattern(out.segment(), 3);
        MemoryRegion in = b.open(64, 0);
        MemoryRegion spare = b.open(64, 0);
        b.qp.post(ReceiveRequest.into(in, 0, 64).wrId(41));
        b.qp.post(ReceiveRequest.into(spare, 0, 64).wrId(42));
        var reached = accesses(in);
        var spareReached = accesses(spare);
        a.qp.post(WorkRequest.send(out, 0, 64).wrId(4));
        assertEquals(4, a.expect(WcStatus.SUCCESS).wrId());
        assertEquals(41, b.expect(WcStatus.SUCCESS).wrId());
        b.expectNothing();
        assertEquals(-1, out.segment().mismatch(in.segment()), "the bytes sent");
        assertEquals(0, spareReached.get(), "the SEND was delivered twice");
        return reached.get(); // the spare stays posted: a SEND is the last operation of a test
    }

    // ---- retries run out ------------------------------------------------------------------------------------

    /** Every packet lost: RETRY_EXC_ERR after 1 + retry_cnt transmissions, the QP in ERROR, the rest flushed. */
    @ParameterizedTest
    @ValueSource(strings = {"soft0", "soft1"})
    void whenEveryRetransmissionIsLostTheRequestFailsWithRetryExceededAndTheRestFlush(String device) {
        open(device);
        MemoryRegion src = a.open(SIZE, 0x11);
        MemoryRegion dst = b.open(SIZE, 0);
        var reached = accesses(dst);
        try (var faults = a.qp.injectFaults(FaultPlan.seeded(1).dropRequests(1))) {
            a.qp.post(WorkRequest.write(src, 0, SIZE).remote(dst.address(), dst.rkey()).wrId(1));
            a.qp.post(WorkRequest.write(src, 0, SIZE).remote(dst.address(), dst.rkey()).wrId(2));
            assertEquals(1, a.expect(WcStatus.RETRY_EXC_ERR).wrId());
            assertEquals(2, a.expect(WcStatus.WR_FLUSH_ERR).wrId());
            assertEquals(QpState.ERROR, a.qp.state());
            assertEquals(1 + FAST.retryCount(), faults.counts().packets());
            assertEquals(1 + FAST.retryCount(), faults.counts().of(Fault.DROP_REQUEST));
        }
        assertEquals(0, reached.get());
        assertFilled(dst, 0);
    }

    // ---- a cut link, a killed peer ------------------------------------------------------------------------

    /** A cut link carries nothing either way: each side's next request fails with RETRY_EXC_ERR. */
    @ParameterizedTest
    @ValueSource(strings = {"soft0", "soft1"})
    void aCutLinkFailsTheRequestsOfBothSidesWithRetryExceeded(String device) {
        open(device);
        MemoryRegion atA = a.open(SIZE, 0x11);
        MemoryRegion atB = b.open(SIZE, 0x22);
        try (var faults = a.qp.injectFaults(FaultPlan.seeded(1))) {
            faults.cut();
            b.qp.post(WorkRequest.write(atB, 0, SIZE).remote(atA.address(), atA.rkey()).wrId(1));
            assertEquals(1, b.expect(WcStatus.RETRY_EXC_ERR).wrId());
            a.qp.post(WorkRequest.write(atA, 0, SIZE).remote(atB.address(), atB.rkey()).wrId(2));
            assertEquals(2, a.expect(WcStatus.RETRY_EXC_ERR).wrId());
            assertEquals(2 * (1 + FAST.retryCount()), faults.counts().of(Fault.CUT), "lost in both directions");
        }
        assertFilled(atA, 0x11);
        assertFilled(atB, 0x22);
    }

    /** A cut scheduled at packet 2: the first WRITE lands, the second fails once its retransmissions are lost. */
    @ParameterizedTest
    @ValueSource(strings = {"soft0", "soft1"})
    void aCutScheduledAtAPacketFailsTheRequestsFromThere(String device) {
        open(device);
        MemoryRegion first = a.open(SIZE, 0x11);
        MemoryRegion second = a.open(SIZE, 0x22);
        MemoryRegion dst = b.open(SIZE, 0);
        try (var faults = a.qp.injectFaults(FaultPlan.seeded(1).at(2, Fault.CUT))) {
            a.qp.post(WorkRequest.write(first, 0, SIZE).remote(dst.address(), dst.rkey()).wrId(1));
            a.qp.post(WorkRequest.write(second, 0, SIZE).remote(dst.address(), dst.rkey()).wrId(2));
            assertEquals(1, a.expect(WcStatus.SUCCESS).wrId());
            assertEquals(2, a.expect(WcStatus.RETRY_EXC_ERR).wrId());
            assertEquals(2 + FAST.retryCount(), faults.counts().packets());
            assertEquals(1 + FAST.retryCount(), faults.counts().of(Fault.CUT));
        }
        assertFilled(dst, 0x11);
    }

    /** A killed peer answers nothing again: the next request fails with RETRY_EXC_ERR; what landed before stays. */
    @ParameterizedTest
    @ValueSource(strings = {"soft0", "soft1"})
    void aKilledPeerFailsTheNextRequestWithRetryExceeded(String device) {
        open(device);
        MemoryRegion before = a.open(SIZE, 0x11);
        MemoryRegion after = a.open(SIZE, 0x22);
        MemoryRegion dst = b.open(SIZE, 0);
        try (var faults = a.qp.injectFaults(FaultPlan.seeded(1))) {
            a.qp.post(WorkRequest.write(before, 0, SIZE).remote(dst.address(), dst.rkey()).wrId(1));
            assertEquals(1, a.expect(WcStatus.SUCCESS).wrId());
            faults.killPeer();
            a.qp.post(WorkRequest.write(after, 0, SIZE).remote(dst.address(), dst.rkey()).wrId(2));
            a.qp.post(WorkRequest.write(after, 0, SIZE).remote(dst.address(), dst.rkey()).wrId(3));
            assertEquals(2, a.expect(WcStatus.RETRY_EXC_ERR).wrId());
            assertEquals(3, a.expect(WcStatus.WR_FLUSH_ERR).wrId());
            assertEquals(1 + FAST.retryCount(), faults.counts().of(Fault.CUT));
        }
        assertFilled(dst, 0x11);
    }

    // ---- a stalled responder --------------------------------------------------------------------------------

    /** Receives stalled for a while: the SEND is RNR-retried (rnr_retry 7: forever) and lands after the stall. */
    @ParameterizedTest
    @ValueSource(strings = {"soft0", "soft1"})
    void aSendToAStalledResponderLandsOnceTheStallEnds(String device) {
        open(device);
        Duration stall = Duration.ofMillis(100);
        MemoryRegion out = a.open(64, 0x5a);
        MemoryRegion in = b.open(64, 0);
        b.qp.post(ReceiveRequest.into(in, 0, 64).wrId(9));
        long start = System.nanoTime();
        try (var faults = b.qp.injectFaults(FaultPlan.seeded(1).stallReceives(stall))) {
            a.qp.post(WorkRequest.send(out, 0, 64).wrId(1));
            assertEquals(1, a.expect(WcStatus.SUCCESS).wrId());
            assertTrue(faults.counts().of(Fault.STALL) >= 1, faults::toString);
        }
        assertTrue(System.nanoTime() - start >= stall.toNanos(), "the SEND landed during the stall");
        assertEquals(9, b.expect(WcStatus.SUCCESS).wrId());
        assertFilled(in, 0x5a);
    }

    /** A stall longer than the RNR retries: RNR_RETRY_EXC_ERR after 1 + rnr_retry NAKs; the receive stays posted. */
    @ParameterizedTest
    @ValueSource(strings = {"soft0", "soft1"})
    void aStallLongerThanTheRnrRetriesFailsTheSendWithRnrRetryExceeded(String device) {
        int rnrRetries = 2;
        open(device, FAST.toBuilder().rnrRetry(rnrRetries).build());
        MemoryRegion out = a.open(64, 0x5a);
        MemoryRegion in = b.open(64, 0);
        b.qp.post(ReceiveRequest.into(in, 0, 64).wrId(9));
        try (var faults = b.qp.injectFaults(FaultPlan.seeded(1).stallReceives(Duration.ofDays(1)))) {
            a.qp.post(WorkRequest.send(out, 0, 64).wrId(1));
            assertEquals(1, a.expect(WcStatus.RNR_RETRY_EXC_ERR).wrId());
            assertEquals(1 + rnrRetries, faults.counts().of(Fault.STALL));
        }
        b.expectNothing();
        assertEquals(1, b.qp.outstandingReceives());
        assertFilled(in, 0);
    }

    // ---- determinism ----------------------------------------------------------------------------------------

    /**
     * A mixed workload under every drawn fault at once: the same seed gives the same counts, completions and
     * memory, twice in-JVM and once over TCP; another seed gives other counts.
     */
    @Test
    void theSameSeedGivesTheSameFaultsCompletionsAndMemoryOnEitherLink() {
        Outcome first = workload("soft0", 42);
        assertTrue(first.counts.packets() > Workload.OPERATIONS, "some packets were retransmitted: " + first.counts);
        assertEquals(first, workload("soft0", 42));
        assertEquals(first, workload("soft1", 42));
        assertNotEquals(first.counts, workload("soft0", 43).counts);
    }

    private record Outcome(FaultInjection.Counts counts, List<String> completions, List<String> memory) {}

    private static final class Workload {
        static final int OPERATIONS = 48;
        static final int SLOT = 64;
    }

    private Outcome workload(String device, long seed) {
        open(device, FAST.toBuilder().retryCount(7).rnrRetry(7).build());
        int n = Workload.OPERATIONS;
        int slot = Workload.SLOT;
        MemoryRegion local = a.open((long) n * slot, 0);
        pattern(local.segment(), (int) seed);
        MemoryRegion remote = b.open((long) n * slot, 0);
        pattern(remote.segment(), 7);
        MemoryRegion inbox = b.open((long) n * slot, 0);
        MemoryRegion counter = b.open(Long.BYTES, 0);
        for (int i = 0; i < n; i += 4) b.qp.post(ReceiveRequest.into(inbox, (long) i * slot, slot).wrId(1000 + i));
        FaultPlan plan = FaultPlan.seeded(seed).dropRequests(0.08).dropResponses(0.08).duplicate(0.08).reorder(0.08)
                .corrupt(0.08).delay(0.08, Duration.ofMillis(1));
        var completions = new ArrayList<String>();
        FaultInjection.Counts counts;
        try (var faults = a.qp.injectFaults(plan)) {
            for (int i = 0; i < n; i++) {
                long at = (long) i * slot;
                WorkRequest wr = switch (i % 4) {
                    case 0 -> WorkRequest.send(local, at, slot);
                    case 1 -> WorkRequest.write(local, at, slot).remote(remote.address() + at, remote.rkey());
                    case 2 -> WorkRequest.read(local, at, slot).remote(remote.address() + at - slot, remote.rkey());
                    default -> WorkRequest.fetchAndAdd(local, at, counter.address(), counter.rkey(), i);
                };
                a.qp.post(wr.wrId(i));
            }
            for (int i = 0; i < n; i++) completions.add("a " + a.next());
            counts = faults.counts();
        }
        for (WorkCompletion[] one = {new WorkCompletion()}; b.cq.poll(one) == 1; ) completions.add("b " + one[0]);
        List<String> memory = List.of(hex(local), hex(remote), hex(inbox), hex(counter));
        teardown();
        return new Outcome(counts, completions.stream().map(c -> c.replaceAll(", qp \\d+", "")).toList(), memory);
    }

    // ---- where the plan applies -----------------------------------------------------------------------------

    /**
     * A plan on a device context reaches its QPs, present and future, each with its own generator; a QP takes one
     * injection at a time.
     */
    @Test
    void aDevicePlanReachesEveryQueuePairOfTheContextEachWithItsOwnGenerator() {
        open("soft1");
        FaultPlan dropFirst = FaultPlan.seeded(5).at(1, Fault.DROP_REQUEST);
        try (var faults = a.context.injectFaults(dropFirst)) {
            assertThrows(IllegalStateException.class, () -> a.qp.injectFaults(FaultPlan.seeded(1)));
            assertThrows(IllegalStateException.class, () -> a.context.injectFaults(FaultPlan.seeded(1)));
            MemoryRegion src = a.open(64, 0x11);
            MemoryRegion dst = b.open(64, 0);
            a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()));
            a.expect(WcStatus.SUCCESS);
            var c = new Endpoint(a.context, arena, QpCapabilities.DEFAULT);
            var d = new Endpoint(b.context, arena, QpCapabilities.DEFAULT);
            Endpoint.connect(c, d, FAST);
            MemoryRegion src2 = c.open(64, 0x22);
            MemoryRegion dst2 = d.open(64, 0);
            c.qp.post(WorkRequest.write(src2, 0, 64).remote(dst2.address(), dst2.rkey()));
            c.expect(WcStatus.SUCCESS);
            assertFilled(dst, 0x11);
            assertFilled(dst2, 0x22);
            assertEquals(4, faults.counts().packets(), faults::toString);
            assertEquals(2, faults.counts().of(Fault.DROP_REQUEST), "packet 1 of each QP");
        }
        try (var own = a.qp.injectFaults(FaultPlan.seeded(1))) {
            assertEquals(0, own.counts().packets());
        }
    }

    @Test
    void badPlansAreRefusedWithTheValueAndTheLimit() {
        FaultPlan plan = FaultPlan.seeded(1);
        var tooLikely = assertThrows(IllegalArgumentException.class, () -> plan.dropRequests(1.5));
        assertTrue(tooLikely.getMessage().contains("[0, 1], was 1.5"), tooLikely::getMessage);
        assertThrows(IllegalArgumentException.class, () -> plan.corrupt(Double.NaN));
        var sum = assertThrows(IllegalArgumentException.class, () -> plan.dropRequests(0.6).duplicate(0.6));
        assertTrue(sum.getMessage().contains("add up to 1.2"), sum::getMessage);
        assertThrows(IllegalArgumentException.class, () -> plan.at(0, Fault.DROP_REQUEST));
        assertThrows(IllegalArgumentException.class, () -> plan.at(1, Fault.STALL));
        assertThrows(IllegalArgumentException.class, () -> plan.delay(0.1, Duration.ofMillis(-1)));
        assertThrows(IllegalArgumentException.class, () -> plan.stallReceives(Duration.ofDays(2)));
        var local = assertThrows(IllegalArgumentException.class, () -> plan.delayLocal(-0.5, Duration.ZERO));
        assertTrue(local.getMessage().contains("[0, 1], was -0.5"), local::getMessage);
        var longDelay = assertThrows(IllegalArgumentException.class, () -> plan.delayLocal(1, Duration.ofHours(1)));
        assertTrue(longDelay.getMessage().contains("PT1M], was PT1H"), longDelay::getMessage);
        assertThrows(IllegalArgumentException.class, () -> plan.at(1, Fault.LOCAL_DELAY));
        assertEquals(Fault.DUPLICATE, plan.dropRequests(0.25).duplicate(0.25).drawn(0.4));
        assertEquals(null, plan.dropRequests(0.25).drawn(0.25));
    }

    // ---- helpers ----------------------------------------------------------------------------------------------

    /** Counts the accesses to {@code region}'s memory admitted on the responder's device. */
    private AtomicInteger accesses(MemoryRegion region) {
        var n = new AtomicInteger();
        SoftInternals.onAdmittedAccess(responderDevice, region.lkey(), n::incrementAndGet);
        return n;
    }

    private static void pattern(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + seed));
    }

    private static void assertFilled(MemoryRegion region, int value) {
        byte[] expected = new byte[(int) region.length()];
        Arrays.fill(expected, (byte) value);
        assertArrayEquals(expected, region.segment().toArray(ValueLayout.JAVA_BYTE));
    }

    private static String hex(MemoryRegion region) {
        return HexFormat.of().formatHex(region.segment().toArray(ValueLayout.JAVA_BYTE));
    }
}
