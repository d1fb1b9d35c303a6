package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.CapturedLog;
import io.mooring.verbs.soft.SoftInternals;
import io.mooring.verbs.testing.FaultPlan;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.Opcode;
import io.mooring.verbs.values.QpCapabilities;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Where the soft provider did not behave like a NIC, each race it is about forced every run through
 * {@link SoftInternals}. Requester side {@code a} is on soft0; responder side {@code b} on soft0 (its responder
 * runs on a's requester thread) or soft1 (over the TCP fabric).
 */
class SoftNicFidelityTest {
    private static final ConnectOptions FAST = VerbsConformance.FAST;
    private static final int SIZE = 1 << 20;

    @RegisterExtension
    final CapturedLog log = new CapturedLog("io.mooring.verbs.soft");
    private final ResourceGraph graph = ResourceGraph.builder().name(getClass().getSimpleName()).build();
    private final Arena arena = Arena.ofShared();
    private Endpoint a;
    private Endpoint b;

    private void open(String responderDevice) {
        open(responderDevice, FAST);
    }

    private void open(String responderDevice, ConnectOptions options) {
        a = new Endpoint(RdmaDevices.open("soft:soft0", graph), arena, QpCapabilities.DEFAULT);
        b = new Endpoint(RdmaDevices.open("soft:" + responderDevice, graph), arena, QpCapabilities.DEFAULT);
        Endpoint.connect(a, b, options);
    }

    @AfterEach
    void teardown() {
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
        arena.close();
    }

    // ---- the end of a window fences the accesses it admitted ------------------------------------------------

    /** How the owner ends a window's exposure. */
    enum Ending { INVALIDATE, DEALLOCATE }

    /**
     * An access admitted through a window is held inside the responder while the owner ends the window and then
     * reuses the memory, as a lease's end does. The end must wait for the access, so a READ returns only bytes
     * from before it and a WRITE never lands after it.
     */
    @ParameterizedTest
    @CsvSource({"soft0, RDMA_READ, INVALIDATE", "soft1, RDMA_READ, INVALIDATE", "soft0, RDMA_WRITE, INVALIDATE",
        "soft1, RDMA_WRITE, INVALIDATE", "soft0, RDMA_READ, DEALLOCATE", "soft1, RDMA_WRITE, DEALLOCATE"})
    void endingAWindowWaitsForTheAccessesItAdmitted(String device, Opcode opcode, Ending ending) throws Exception {
        final int exposedBytes = 0x11;
        final int reusedBytes = 0x22;
        final int requesterBytes = 0x33;
        open(device);
        MemoryRegion exposed = b.region(SIZE, exposedBytes, Access.LOCAL_WRITE, Access.MW_BIND);
        MemoryWindow window = b.pd.allocateWindow(MwType.TYPE_2);
        b.qp.post(WorkRequest.bind(window, exposed, 0, SIZE, EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE)));
        b.expect(WcStatus.SUCCESS);
        int rkey = window.rkey();
        MemoryRegion local = a.open(SIZE, requesterBytes);
        var gate = new Gate();
        SoftInternals.onAdmittedAccess(device, exposed.lkey(), gate);

        a.qp.post(new WorkRequest().opcode(opcode).local(local, 0, SIZE).remote(exposed.address(), rkey));
        gate.awaitEntered();
        var reuse = new FutureTask<Void>(() -> {
            if (ending == Ending.INVALIDATE) {
                b.qp.post(WorkRequest.invalidate(rkey));
                b.expect(WcStatus.SUCCESS);
            } else {
                window.close();
            }
            exposed.segment().fill((byte) reusedBytes);
            return null;
        });
        Thread.ofVirtual().start(reuse);
        awaitUntil(() -> reuse.isDone() || SoftInternals.windowChangeWaits(device, rkey),
                "the window's end neither returned nor waited for the access");
        gate.open();
        a.expect(WcStatus.SUCCESS);
        reuse.get(Endpoint.WAIT.toSeconds(), TimeUnit.SECONDS);

        if (opcode == Opcode.RDMA_READ) {
            assertFilled(local, exposedBytes, "the READ returned memory reused after the window ended");
        } else {
            assertFilled(exposed, reusedBytes, "the WRITE landed after the window ended");
        }
    }

    /**
     * A LOCAL_INV held back by the fault plan ({@link FaultPlan#delayLocal}) is a NIC behind on its send queue:
     * until it executes the key keeps working — a WRITE posted after it is admitted — and it completes only after
     * its delay and after the accesses it found admitted; from its completion on nothing is admitted.
     */
    @ParameterizedTest
    @ValueSource(strings = {"soft0", "soft1"})
    void aDelayedInvalidationCompletesAfterItsDelayAndAfterTheAccessesItAdmitted(String device) throws Exception {
        Duration delay = Duration.ofSeconds(1); // far longer than a WRITE on a loaded machine: it is admitted first
        open(device);
        MemoryRegion exposed = b.region(SIZE, 0x11, Access.LOCAL_WRITE, Access.MW_BIND);
        MemoryWindow window = b.pd.allocateWindow(MwType.TYPE_2);
        b.qp.post(WorkRequest.bind(window, exposed, 0, SIZE, EnumSet.of(Access.REMOTE_WRITE)));
        b.expect(WcStatus.SUCCESS);
        int rkey = window.rkey();
        MemoryRegion local = a.open(64, 0x33);
        var gate = new Gate();
        SoftInternals.onAdmittedAccess(device, exposed.lkey(), gate);
        try (var faults = b.qp.injectFaults(FaultPlan.seeded(7).delayLocal(1, delay))) {
            long posted = System.nanoTime();
            b.qp.post(WorkRequest.invalidate(rkey).wrId(5));
            a.qp.post(WorkRequest.write(local, 0, 64).remote(exposed.address(), rkey).wrId(6));
            gate.awaitEntered(); // admitted after the LOCAL_INV was posted: it has not executed yet
            awaitUntil(() -> SoftInternals.windowChangeWaits(device, rkey), "the invalidation never ran");
            assertTrue(System.nanoTime() - posted >= delay.toNanos(), "the invalidation ran before its delay");
            b.expectNothing(); // it waits for the admitted WRITE
            gate.open();
            assertEquals(6, a.expect(WcStatus.SUCCESS).wrId());
            assertEquals(5, b.expect(WcStatus.SUCCESS).wrId());
            assertEquals(1, faults.counts().of(FaultPlan.Fault.LOCAL_DELAY), faults::toString);
            assertEquals(0, faults.counts().packets(), "a local request is no packet");
        }
        assertEquals(-1, exposed.segment().asSlice(0, 64).mismatch(local.segment()), "the admitted WRITE landed");
        a.qp.post(WorkRequest.write(local, 0, 64).remote(exposed.address() + 64, rkey));
        a.expect(WcStatus.REM_ACCESS_ERR);
        assertEquals(0x11, exposed.segment().get(ValueLayout.JAVA_BYTE, 64), "a WRITE after the completion landed");
    }

    /** A LOCAL_INV held back while its QP moves to ERROR flushes, and the window keeps its binding. */
    @Test
    void aDelayedInvalidationOfAQueuePairThatFailsMeanwhileFlushes() throws InterruptedException {
        open("soft0");
        MemoryRegion exposed = b.region(4096, 0, Access.LOCAL_WRITE, Access.MW_BIND);
        MemoryWindow window = b.pd.allocateWindow(MwType.TYPE_2);
        b.qp.post(WorkRequest.bind(window, exposed, 0, 4096, EnumSet.of(Access.REMOTE_WRITE)));
        b.expect(WcStatus.SUCCESS);
        try (var faults = b.qp.injectFaults(FaultPlan.seeded(7).delayLocal(1, Duration.ofMinutes(1)))) {
            b.qp.post(WorkRequest.invalidate(window.rkey()).wrId(5));
            awaitUntil(() -> faults.counts().of(FaultPlan.Fault.LOCAL_DELAY) == 1, "the LOCAL_INV was never held back");
            b.qp.moveToError();
            WorkCompletion wc = b.next();
            assertEquals(5, wc.wrId());
            assertEquals(WcStatus.WR_FLUSH_ERR, wc.status());
        }
        assertTrue(window.isBound(), "a flushed LOCAL_INV unbound the window");
    }

    /** An admitted-access hook that holds the accesses it sees until opened. */
    private static final class Gate implements Runnable {
        private final CountDownLatch entered = new CountDownLatch(1);
        private final CountDownLatch opened = new CountDownLatch(1);

        @Override
        public void run() {
            entered.countDown();
            try {
                opened.await(Endpoint.WAIT.toSeconds(), TimeUnit.SECONDS); // a failed test's access goes on later
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        void awaitEntered() throws InterruptedException {
            assertTrue(entered.await(Endpoint.WAIT.toSeconds(), TimeUnit.SECONDS), "the access never came");
        }

        void open() {
            opened.countDown();
        }
    }

    // ---- retransmitted atomics --------------------------------------------------------------------------------

    /**
     * Eight fetch-and-adds in flight at once over TCP, the responder held inside the last one until the requester takes
     * it for hung and sends all eight again, which the responder has executed by then: each retransmission must be
     * answered with the value its atomic found then, never executed again — not only the last one's, as the
     * requester resends every request in flight from the oldest.
     */
    @Test
    void atomicsSentAgainTogetherGetTheirFirstResults() throws Exception {
        int n = 8;
        Duration hold = Duration.ofMillis(SoftInternals.hungPeerMillis() + 1500); // one going back, not seven
        open("soft1", FAST.toBuilder().retryCount(7).maxRdAtomic(n).maxDestRdAtomic(n).build());
        MemoryRegion counter = b.open(8, 0);
        MemoryRegion results = a.open(8L * n, 0xff);
        var accesses = new java.util.concurrent.atomic.AtomicInteger();
        SoftInternals.onAdmittedAccess("soft1", counter.lkey(), () -> {
            if (accesses.incrementAndGet() == n) sleep(hold);
        });
        for (int i = 0; i < n; i++) {
            a.qp.post(WorkRequest.fetchAndAdd(results, 8L * i, counter.address(), counter.rkey(), 1).wrId(i));
        }
        for (int i = 0; i < n; i++) assertEquals(i, a.expect(WcStatus.SUCCESS).wrId());
        for (int i = 0; i < n; i++) {
            assertEquals(i, results.segment().get(ValueLayout.JAVA_LONG, 8L * i), "fetch-and-add " + i);
        }
        assertEquals(n, counter.segment().get(ValueLayout.JAVA_LONG, 0), "an atomic was executed twice");
        assertEquals(n, accesses.get(), "a retransmitted atomic touched the memory again");
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- key indexes ----------------------------------------------------------------------------------------

    @Test
    void keyIndexesThatWrapSkipTheOnesInUse() {
        open("soft1");
        MemoryRegion live = b.open(64, 0x11);
        int index = live.rkey() >>> 8;
        SoftInternals.restartKeyIndexesAt("soft1", (1 << 24) + index); // gone round once, onto a live index
        MemoryRegion next = b.open(64, 0x22);
        assertNotEquals(index, next.rkey() >>> 8, "a key index still in use was handed out again");

        SoftInternals.restartKeyIndexesAt("soft1", (1 << 24) - 1);
        MemoryWindow top = b.pd.allocateWindow(MwType.TYPE_2);
        MemoryWindow wrapped = b.pd.allocateWindow(MwType.TYPE_2);
        assertEquals(0xff_ffff, top.rkey() >>> 8);
        assertNotEquals(0, wrapped.rkey() >>> 8, "index 0 is never handed out");

        MemoryRegion src = a.open(64, 0x33);
        a.qp.post(WorkRequest.write(src, 0, 64).remote(live.address(), live.rkey()));
        a.expect(WcStatus.SUCCESS);
        assertFilled(live, 0x33, "the first region's key no longer reaches it");
        assertFilled(next, 0x22, "a write through another region's key reached this one");
    }

    // ---- RNR retries end when the QP stops -----------------------------------------------------------------

    @ParameterizedTest
    @ValueSource(strings = {"soft0", "soft1"})
    void aSendRetriedForeverOnRnrFlushesWhenItsQpMovesToError(String device) throws Exception {
        open(device); // rnr_retry 7: retried as long as the responder has no receive, which it never gets here
        MemoryRegion out = a.open(16, 1);
        CountDownLatch inHand = sendGathered(out);
        a.qp.post(WorkRequest.send(out, 0, 16).wrId(7));
        assertTrue(inHand.await(Endpoint.WAIT.toSeconds(), TimeUnit.SECONDS), "the requester never took the send");
        a.qp.moveToError();
        assertEquals(7, a.expect(WcStatus.WR_FLUSH_ERR).wrId());
        assertEquals(0, a.qp.outstandingSends());
    }

    @ParameterizedTest
    @ValueSource(strings = {"soft0", "soft1"})
    void aSendRetriedOnRnrIsDiscardedByAResetNotSentOnTheNextConnection(String device) throws Exception {
        // Transport retries (7 of 67 ms) that outlast the reconnect: a send kept past the reset would reach it.
        ConnectOptions patient = FAST.toBuilder().ackTimeout(Duration.ofMillis(67)).retryCount(7).rnrRetry(7).build();
        open(device, patient);
        MemoryRegion discarded = a.open(16, 0x51);
        MemoryRegion sent = a.open(16, 0x52);
        CountDownLatch inHand = sendGathered(discarded);
        a.qp.post(WorkRequest.send(discarded, 0, 16).wrId(7));
        assertTrue(inHand.await(Endpoint.WAIT.toSeconds(), TimeUnit.SECONDS), "the requester never took the send");
        a.qp.reset();
        b.qp.reset();
        Endpoint.connect(a, b, patient);
        MemoryRegion in = b.open(16, 0);
        b.qp.post(ReceiveRequest.into(in, 0, 16).wrId(9));
        a.qp.post(WorkRequest.send(sent, 0, 16).wrId(8));
        assertEquals(8, a.expect(WcStatus.SUCCESS).wrId());
        assertEquals(9, b.expect(WcStatus.SUCCESS).wrId());
        assertFilled(in, 0x52, "a send discarded by a reset was delivered on the next connection");
    }

    /** Counts down once the requester gathers {@code out}'s bytes: it has a SEND from there in hand. */
    private static CountDownLatch sendGathered(MemoryRegion out) {
        var gathered = new CountDownLatch(1);
        SoftInternals.onAdmittedAccess("soft0", out.lkey(), gathered::countDown);
        return gathered;
    }

    // ---- the TCP fabric admits only the peer ----------------------------------------------------------------

    /**
     * A third process on the host dials the listening side of a live connection claiming to be its peer (a newer
     * dial of it), then writes: without the QP's token it is refused, and the peer's connection carries on.
     * With the token, the same frames are served, so the refusal was the token's doing.
     */
    @Test
    void aDialWithoutTheQpsTokenIsRefusedAndThePeersConnectionStays() throws Exception {
        open("soft1");
        QpInfo ia = a.qp.info(FAST);
        QpInfo ib = b.qp.info(FAST);
        boolean aDials = ia.lid() != ib.lid() ? ia.lid() < ib.lid() : ia.qpn() < ib.qpn();
        Endpoint dialer = aDials ? a : b;
        Endpoint listener = aDials ? b : a;
        QpInfo from = aDials ? ia : ib;
        QpInfo to = aDials ? ib : ia;
        MemoryRegion target = listener.open(64, 0);
        MemoryRegion src = dialer.open(64, 0x11);
        dialer.qp.post(WorkRequest.write(src, 0, 64).remote(target.address(), target.rkey()));
        dialer.expect(WcStatus.SUCCESS); // the connection is up; the listener expects the next PSN
        int nextPsn = (from.psn() + 1) & 0xff_ffff;

        try (Socket forger = new Socket(to.gid().address(), to.lid())) {
            forger.setSoTimeout((int) Endpoint.WAIT.toMillis());
            // Buffered: HELLO and WRITE leave in one write, so a refusal cannot close the socket between them.
            var out = new DataOutputStream(new BufferedOutputStream(forger.getOutputStream()));
            writeHello(out, from, to, to.token() ^ 1);
            writeWrite(out, nextPsn, target, 0x66);
            assertTrue(closedByPeer(forger), "a dial without the QP's token was let in");
        }
        assertFilled(target, 0x11, "the forged write landed");
        dialer.qp.post(WorkRequest.write(dialer.open(64, 0x33), 0, 64).remote(target.address(), target.rkey()));
        dialer.expect(WcStatus.SUCCESS);
        assertFilled(target, 0x33, "the peer's own write");

        try (Socket holder = new Socket(to.gid().address(), to.lid())) {
            holder.setSoTimeout((int) Endpoint.WAIT.toMillis());
            var out = new DataOutputStream(new BufferedOutputStream(holder.getOutputStream()));
            writeHello(out, from, to, to.token());
            writeWrite(out, (nextPsn + 1) & 0xff_ffff, target, 0x66);
            var in = new DataInputStream(holder.getInputStream());
            assertEquals(2, in.readByte(), "a RESPONSE frame");
            in.readInt();
            assertEquals(0, in.readByte(), "an ACK");
        }
        assertFilled(target, 0x66, "the write of a dial with the token");
    }

    /**
     * A dial the previous peer started before a reset arrives late, with the token of that connection: it is refused
     * like any other without the current token, but quietly, since nobody forged it. Any other token still warns.
     */
    @Test
    void aLateDialWithThePreviousTokenIsRefusedQuietly() throws Exception {
        open("soft1");
        QpInfo ia = a.qp.info(FAST);
        QpInfo ib = b.qp.info(FAST);
        boolean aDials = ia.lid() != ib.lid() ? ia.lid() < ib.lid() : ia.qpn() < ib.qpn();
        Endpoint listener = aDials ? b : a;
        QpInfo from = aDials ? ia : ib;
        QpInfo previous = aDials ? ib : ia;
        a.qp.reset();
        b.qp.reset();
        Endpoint.connect(a, b, FAST);
        assertNotEquals(previous.token(), listener.qp.info(FAST).token(), "a reset draws a new token");

        for (long token : new long[] {previous.token(), previous.token() ^ 1}) {
            try (Socket late = new Socket(previous.gid().address(), previous.lid())) {
                late.setSoTimeout((int) Endpoint.WAIT.toMillis());
                var out = new DataOutputStream(new BufferedOutputStream(late.getOutputStream()));
                writeHello(out, from, previous, token);
                out.flush();
                assertTrue(closedByPeer(late), "a dial with an old or a made-up token was let in");
            }
        }
        assertEquals(List.of("WARNING: " + listener.context.device().name() + ": refused a connection"),
                log.entries().stream()
                .filter(e -> e.level().compareTo(System.Logger.Level.INFO) > 0)
                .map(e -> e.level() + ": " + e.message().substring(0, e.message().indexOf(" from "))).toList(),
                "only the made-up token warns");
    }

    /** A HELLO frame as TcpLink lays it out, claiming to be a newer dial of {@code from} than any before. */
    private static void writeHello(DataOutputStream out, QpInfo from, QpInfo to, long token) throws IOException {
        out.writeInt(0x4d4f4f52);
        out.writeShort(4);
        out.writeInt(from.qpn());
        out.writeInt(to.qpn());
        out.writeLong(from.gid().subnetPrefix());
        out.writeLong(from.gid().interfaceId());
        out.writeInt(from.lid());
        out.writeInt(Integer.MAX_VALUE);
        out.writeLong(token);
    }

    /** A REQUEST frame as TcpLink lays it out: an RDMA WRITE filling {@code target} with {@code fill}. */
    private static void writeWrite(DataOutputStream out, int psn, MemoryRegion target, int fill) throws IOException {
        byte[] payload = new byte[(int) target.length()];
        Arrays.fill(payload, (byte) fill);
        out.writeByte(1);
        out.writeInt(1);
        out.writeLong(0); // consumed: nothing of the other direction read
        out.writeInt(Opcode.RDMA_WRITE.code());
        out.writeInt(psn);
        out.writeLong(target.address());
        out.writeInt(target.rkey());
        out.writeInt(payload.length);
        out.writeInt(0);
        out.writeLong(0);
        out.writeLong(0);
        out.writeInt(payload.length);
        out.write(payload);
        out.flush();
    }

    /** Whether the other end closed {@code s} (a reset if it closed with our frames unread); fails on timeout. */
    private static boolean closedByPeer(Socket s) throws IOException {
        try {
            return s.getInputStream().read() < 0;
        } catch (SocketException e) {
            return true;
        }
    }

    // ---- helpers --------------------------------------------------------------------------------------------

    private static void awaitUntil(BooleanSupplier condition, String failure) throws InterruptedException {
        long deadline = System.nanoTime() + Endpoint.WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, failure);
            Thread.sleep(1);
        }
    }

    private static void assertFilled(MemoryRegion mr, int fill, String what) {
        byte[] expected = new byte[(int) mr.length()];
        Arrays.fill(expected, (byte) fill);
        long at = mr.segment().mismatch(MemorySegment.ofArray(expected));
        assertEquals(-1, at, () -> what + ": byte " + at + " is " + mr.segment().get(ValueLayout.JAVA_BYTE, at)
                + ", not " + (byte) fill);
    }
}
