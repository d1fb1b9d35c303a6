package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.lifecycle.ResourceState;
import io.mooring.testing.EmulatedCpus;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.DeviceAttributes;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.Opcode;
import io.mooring.verbs.values.PortAttributes;
import io.mooring.verbs.values.QpAttributes;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.QpState;
import io.mooring.verbs.values.WcOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The behaviour every provider must show, written once: each subclass supplies the two device contexts (same
 * device, two devices over TCP, a real NIC) and inherits every test. Memory is checked byte for byte after
 * every rejected access.
 */
abstract class VerbsConformance {
    /** Short transport timeouts so that "no answer" cases finish quickly. */
    static final ConnectOptions FAST = ConnectOptions.builder().ackTimeout(Duration.ofMillis(4)).retryCount(2)
            .minRnrTimer(Duration.ofNanos(10_000)).build();

    ResourceGraph graph;
    Arena arena;
    Endpoint a;
    Endpoint b;

    /** Opens the requester side's device. */
    abstract DeviceContext openFirst(ResourceGraph graph);

    /** Opens the responder side's device (may be the same device). */
    abstract DeviceContext openSecond(ResourceGraph graph);

    /** Whether the device confines an access through a window to the window's range (rxe does not). */
    boolean enforcesWindowBounds() {
        return true;
    }

    /**
     * Situations in which a device reports a different, documented completion status than the one a NIC
     * reports per the InfiniBand spec (which the soft provider follows). A subclass that overrides
     * {@link #expected} must say why, per situation; every test still asserts one exact status.
     */
    enum Deviation {
        /** Requester side of a SEND longer than the receive buffer (spec: REM_INV_REQ_ERR). */
        SEND_TOO_LONG_REQUESTER,
        /** Responder side of the same (spec: LOC_LEN_ERR). */
        SEND_TOO_LONG_RESPONDER,
        /** A local buffer with an invalid lkey (spec: LOC_PROT_ERR). */
        BAD_LKEY,
        /** A WRITE through a QP that grants no remote write (spec: REM_ACCESS_ERR). */
        QP_DENIES_REMOTE_WRITE,
    }

    /** The status this device reports in {@code situation}; {@code standard} unless it deviates. */
    WcStatus expected(Deviation situation, WcStatus standard) {
        return standard;
    }

    /**
     * Whether the device refuses a misaligned atomic when it is posted (EINVAL from {@code ibv_post_send})
     * instead of executing it and completing it with REM_INV_REQ_ERR.
     */
    boolean refusesMisalignedAtomicsAtPost() {
        return false;
    }

    /** Whether a query reports the service level and hop limit the QP was connected with. */
    boolean keepsServiceLevelAndHopLimit() {
        return true;
    }

    @BeforeEach
    void connect() {
        graph = ResourceGraph.builder().name(getClass().getSimpleName()).build();
        arena = Arena.ofShared();
        a = new Endpoint(openFirst(graph), arena, QpCapabilities.DEFAULT);
        b = new Endpoint(openSecond(graph), arena, QpCapabilities.DEFAULT);
        connect(FAST);
    }

    void connect(ConnectOptions options) {
        Endpoint.connect(a, b, options);
    }

    @AfterEach
    void teardown() {
        graph.close(); // through the lifecycle graph: any EBUSY would surface here as a DestroyFailedException
        assertEquals(0, graph.liveCount(), graph::dump);
        arena.close();
    }

    // ---- data movement ---------------------------------------------------------------------------------------

    @Test
    void writeThenReadBack() {
        MemoryRegion src = a.open(4096, 0x11);
        MemoryRegion dst = b.open(4096, 0);
        MemoryRegion back = a.open(4096, 0);
        src.segment().asSlice(100, 8).fill((byte) 0x7f);

        a.qp.post(WorkRequest.write(src, 0, 4096).remote(dst.address(), dst.rkey()).wrId(1));
        WorkCompletion w = a.expect(WcStatus.SUCCESS);
        assertEquals(1, w.wrId());
        assertEquals(WcOpcode.RDMA_WRITE, w.opcode());
        assertEquals(-1, src.segment().mismatch(dst.segment()));

        a.qp.post(WorkRequest.read(back, 0, 4096).remote(dst.address(), dst.rkey()).wrId(2));
        WorkCompletion r = a.expect(WcStatus.SUCCESS);
        assertEquals(WcOpcode.RDMA_READ, r.opcode());
        assertEquals(4096, r.byteLength());
        assertEquals(-1, src.segment().mismatch(back.segment()));
        b.expectNothing();
    }

    @Test
    void scatterGatherListsGatherAndScatterInOrder() {
        MemoryRegion src = a.open(64, 0);
        for (int i = 0; i < 64; i++) src.segment().set(ValueLayout.JAVA_BYTE, i, (byte) i);
        MemoryRegion dst = b.open(64, 0);
        MemoryRegion back = a.open(64, 0);
        a.qp.post(new WorkRequest().opcode(Opcode.RDMA_WRITE).local(src, 32, 32).local(src, 0, 32)
                .remote(dst.address(), dst.rkey()));
        a.expect(WcStatus.SUCCESS);
        assertEquals(-1, dst.segment().asSlice(0, 32).mismatch(src.segment().asSlice(32, 32)));
        assertEquals(-1, dst.segment().asSlice(32, 32).mismatch(src.segment().asSlice(0, 32)));

        a.qp.post(new WorkRequest().opcode(Opcode.RDMA_READ).local(back, 48, 16).local(back, 0, 48)
                .remote(dst.address(), dst.rkey()));
        a.expect(WcStatus.SUCCESS);
        assertEquals(-1, back.segment().asSlice(48, 16).mismatch(dst.segment().asSlice(0, 16)));
        assertEquals(-1, back.segment().asSlice(0, 48).mismatch(dst.segment().asSlice(16, 48)));
    }

    @Test
    void sendConsumesReceivesInOrderWithImmediateData() {
        MemoryRegion out = a.open(256, 0x5a);
        MemoryRegion in = b.open(512, 0);
        b.qp.post(ReceiveRequest.into(in, 0, 256).wrId(10));
        b.qp.post(ReceiveRequest.into(in, 256, 256).wrId(11));

        a.qp.post(WorkRequest.send(out, 0, 100).wrId(1));
        a.qp.post(WorkRequest.send(out, 0, 200).immediate(0xC0FFEE).wrId(2));
        assertEquals(1, a.expect(WcStatus.SUCCESS).wrId());
        assertEquals(WcOpcode.SEND, a.expect(WcStatus.SUCCESS).opcode());

        WorkCompletion first = b.expect(WcStatus.SUCCESS);
        assertEquals(10, first.wrId());
        assertEquals(WcOpcode.RECV, first.opcode());
        assertEquals(100, first.byteLength());
        assertFalse(first.hasImmediate());
        assertFalse(first.has(WcFlag.WITH_IMM), first::toString);
        assertEquals(0, first.vendorError());
        WorkCompletion second = b.expect(WcStatus.SUCCESS);
        assertEquals(11, second.wrId());
        assertEquals(200, second.byteLength());
        assertTrue(second.has(WcFlag.WITH_IMM), second::toString);
        assertEquals(0xC0FFEE, second.immediate());
        assertEquals(-1, in.segment().asSlice(256, 200).mismatch(out.segment().asSlice(0, 200)));
        assertEquals(0, in.segment().get(ValueLayout.JAVA_BYTE, 100), "nothing written past the message");
    }

    @Test
    void writeWithImmediateConsumesAReceive() {
        MemoryRegion src = a.open(64, 0x42);
        MemoryRegion dst = b.open(64, 0);
        MemoryRegion unused = b.open(16, 0);
        b.qp.post(ReceiveRequest.into(unused, 0, 16).wrId(77));
        a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()).immediate(7));
        a.expect(WcStatus.SUCCESS);
        WorkCompletion wc = b.expect(WcStatus.SUCCESS);
        assertEquals(77, wc.wrId());
        assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, wc.opcode());
        assertTrue(wc.has(WcFlag.WITH_IMM), wc::toString);
        assertEquals(7, wc.immediate());
        assertEquals(-1, src.segment().mismatch(dst.segment()));
    }

    /**
     * A request's list grows from one entry to 16 and refuses a 17th; the entries of one as long as the QP takes are
     * gathered in order.
     */
    @Test
    void aRequestTakesSixteenEntriesAndGathersThemInOrder() {
        MemoryRegion src = a.open(16 * 4, 0);
        for (int i = 0; i < 16 * 4; i++) src.segment().set(ValueLayout.JAVA_BYTE, i, (byte) i);
        var sixteen = new WorkRequest().opcode(Opcode.RDMA_WRITE);
        for (int e = 0; e < 16; e++) sixteen.local(src, 4L * e, 4);
        assertThrows(IllegalArgumentException.class, () -> sixteen.local(src, 0, 4), "a 17th entry");
        int n = QpCapabilities.DEFAULT.maxSendSge();
        MemoryRegion dst = b.open(4L * n, 0);
        var write = new WorkRequest().opcode(Opcode.RDMA_WRITE).remote(dst.address(), dst.rkey());
        for (int e = n - 1; e >= 0; e--) write.local(src, 4L * e, 4); // backwards: entry k is bytes 4 × (n - 1 - k)
        a.qp.post(write);
        a.expect(WcStatus.SUCCESS);
        for (int k = 0; k < n; k++) {
            assertEquals(-1, dst.segment().asSlice(4L * k, 4).mismatch(src.segment().asSlice(4L * (n - 1 - k), 4)),
                    "entry " + k);
        }
    }

    /**
     * A zero-length WRITE or READ reaches no memory, so its rkey is not checked (IBTA C9-88; rxe's check_rkey): a
     * WRITE with immediate of no bytes is a notification that names no region. It was refused as a remote access
     * error, failing both QPs.
     */
    @Test
    void zeroLengthWritesAndReadsNeedNoRkey() {
        b.qp.post(new ReceiveRequest().wrId(77));
        a.qp.post(new WorkRequest().opcode(Opcode.RDMA_WRITE).immediate(7).wrId(1));
        assertEquals(1, a.expect(WcStatus.SUCCESS).wrId());
        WorkCompletion wc = b.expect(WcStatus.SUCCESS);
        assertEquals(77, wc.wrId());
        assertEquals(WcOpcode.RECV_RDMA_WITH_IMM, wc.opcode());
        assertEquals(7, wc.immediate());
        assertEquals(0, wc.byteLength());
        a.qp.post(new WorkRequest().opcode(Opcode.RDMA_WRITE).wrId(2));
        assertEquals(2, a.expect(WcStatus.SUCCESS).wrId());
        a.qp.post(new WorkRequest().opcode(Opcode.RDMA_READ).wrId(3));
        assertEquals(3, a.expect(WcStatus.SUCCESS).wrId());
        assertEquals(QpState.RTS, b.qp.state());
        assertAWriteLands();
    }

    @Test
    void inlineSendsCopyAtPostTime() {
        MemoryRegion out = a.open(32, 0x33);
        MemoryRegion in = b.open(32, 0);
        b.qp.post(ReceiveRequest.into(in, 0, 32));
        WorkRequest wr = WorkRequest.send(out, 0, 32).inline(true);
        a.qp.post(wr);
        out.segment().fill((byte) 0x44); // after the post: an inline send already has its copy
        a.expect(WcStatus.SUCCESS);
        b.expect(WcStatus.SUCCESS);
        assertEquals(0x33, in.segment().get(ValueLayout.JAVA_BYTE, 31));
    }

    @Test
    void atomicsReturnTheOriginalValue() {
        MemoryRegion target = b.open(64, 0);
        MemoryRegion result = a.open(16, 0);
        target.segment().set(ValueLayout.JAVA_LONG, 8, 40);

        a.qp.post(WorkRequest.fetchAndAdd(result, 0, target.address() + 8, target.rkey(), 2));
        assertEquals(WcOpcode.FETCH_ADD, a.expect(WcStatus.SUCCESS).opcode());
        assertEquals(40, result.segment().get(ValueLayout.JAVA_LONG, 0));
        assertEquals(42, target.segment().get(ValueLayout.JAVA_LONG, 8));

        a.qp.post(WorkRequest.compareAndSwap(result, 8, target.address() + 8, target.rkey(), 41, 99));
        a.expect(WcStatus.SUCCESS);
        assertEquals(42, result.segment().get(ValueLayout.JAVA_LONG, 8), "failed compare returns the original");
        assertEquals(42, target.segment().get(ValueLayout.JAVA_LONG, 8));

        a.qp.post(WorkRequest.compareAndSwap(result, 8, target.address() + 8, target.rkey(), 42, 99));
        assertEquals(WcOpcode.COMP_SWAP, a.expect(WcStatus.SUCCESS).opcode());
        assertEquals(99, target.segment().get(ValueLayout.JAVA_LONG, 8));
    }

    @Test
    void misalignedAtomicsAreInvalidRequests() {
        MemoryRegion target = b.open(64, 0);
        MemoryRegion result = a.open(8, 0);
        WorkRequest misaligned = WorkRequest.fetchAndAdd(result, 0, target.address() + 4, target.rkey(), 1);
        if (refusesMisalignedAtomicsAtPost()) {
            var e = assertThrows(VerbsException.class, () -> a.qp.post(misaligned));
            assertEquals(Errno.EINVAL.number(), e.errno(), e::getMessage);
            assertTrue(e.getMessage().contains("aligned"), e.getMessage());
            assertEquals(0, a.qp.outstandingSends(), "a refused post leaves nothing behind");
            assertEquals(QpState.RTS, a.qp.state());
        } else {
            a.qp.post(misaligned);
            a.expect(WcStatus.REM_INV_REQ_ERR);
            assertEquals(QpState.ERROR, a.qp.state());
        }
        assertEquals(-1, target.segment().mismatch(MemorySegment.ofArray(new byte[64])));
    }

    // ---- access violations ------------------------------------------------------------------------------------

    // ---- many requests in flight -----------------------------------------------------------------------------

    /**
     * WRITEs, READs of what the WRITE before each wrote, and SENDs, posted at once; the later SENDs' receives come only
     * after a while, so those SENDs meet RNR NAKs with the requests behind them already on the wire. Every request
     * completes once, in post order, with its bytes; the receives in the order of the SENDs.
     */
    @Test
    void requestsPostedTogetherCompleteInPostOrderWithTheirBytes() throws Exception {
        int n = 48;
        int size = 64;
        MemoryRegion src = a.open((long) n * size, 0);
        for (int i = 0; i < n * size; i++) src.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 7 + 3));
        MemoryRegion remote = b.open((long) n * size, 0x5a);
        MemoryRegion back = a.open((long) n * size, 0);
        MemoryRegion in = b.open((long) n * size, 0);
        List<Integer> sends = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            long at = (long) i * size;
            switch (i % 3) {
                case 0 -> a.qp.post(WorkRequest.write(src, at, size).remote(remote.address() + at, remote.rkey()).wrId(i));
                case 1 -> a.qp.post(WorkRequest.read(back, at, size).remote(remote.address() + at - size, remote.rkey())
                        .wrId(i));
                default -> {
                    a.qp.post(WorkRequest.send(src, at, size).wrId(i));
                    sends.add(i);
                }
            }
        }
        int early = sends.size() / 2;
        for (int j = 0; j < sends.size(); j++) {
            if (j == early) Thread.sleep(50); // the SENDs from here on wait for their receives
            b.qp.post(ReceiveRequest.into(in, (long) j * size, size).wrId(j));
        }
        for (int i = 0; i < n; i++) {
            WorkCompletion wc = a.expect(WcStatus.SUCCESS);
            assertEquals(i, wc.wrId(), "completions in post order");
            assertEquals(i % 3 == 0 ? WcOpcode.RDMA_WRITE : i % 3 == 1 ? WcOpcode.RDMA_READ : WcOpcode.SEND,
                    wc.opcode());
        }
        for (int i = 0; i < n; i += 3) {
            long at = (long) i * size;
            assertEquals(-1, remote.segment().asSlice(at, size).mismatch(src.segment().asSlice(at, size)), "write " + i);
            assertEquals(-1, back.segment().asSlice(at + size, size).mismatch(src.segment().asSlice(at, size)),
                    "the read after write " + i + " saw it");
        }
        for (int j = 0; j < sends.size(); j++) {
            WorkCompletion wc = b.expect(WcStatus.SUCCESS);
            assertEquals(j, wc.wrId(), "receives in order");
            long from = (long) sends.get(j) * size;
            assertEquals(-1, in.segment().asSlice((long) j * size, size).mismatch(src.segment().asSlice(from, size)),
                    "receive " + j + " holds send " + sends.get(j));
        }
        a.expectNothing();
        b.expectNothing();
    }

    /**
     * More READs and atomics than the QP may have outstanding (max_rd_atomic 2), posted at once: the excess waits in
     * the send queue, as on a NIC, and none fails. The fetch-and-adds return the counter in post order.
     */
    @Test
    void readsAndAtomicsPastTheReadDepthWaitTheirTurn() {
        a.qp.reset();
        b.qp.reset();
        connect(FAST.toBuilder().maxRdAtomic(2).maxDestRdAtomic(2).build());
        int n = 24;
        MemoryRegion remote = b.open(n * 8L + 8, 0);
        for (int i = 0; i < n; i++) remote.segment().set(ValueLayout.JAVA_LONG, 8L + 8L * i, 1000L + i);
        MemoryRegion local = a.open(2L * n * 8, 0);
        for (int i = 0; i < n; i++) {
            a.qp.post(WorkRequest.read(local, 8L * i, 8).remote(remote.address() + 8 + 8L * i, remote.rkey()).wrId(i));
            a.qp.post(WorkRequest.fetchAndAdd(local, 8L * (n + i), remote.address(), remote.rkey(), 1).wrId(n + i));
        }
        for (int i = 0; i < n; i++) {
            assertEquals(i, a.expect(WcStatus.SUCCESS).wrId());
            assertEquals(n + i, a.expect(WcStatus.SUCCESS).wrId());
        }
        for (int i = 0; i < n; i++) {
            assertEquals(1000L + i, local.segment().get(ValueLayout.JAVA_LONG, 8L * i));
            assertEquals(i, local.segment().get(ValueLayout.JAVA_LONG, 8L * (n + i)), "fetch-and-add " + i);
        }
        assertEquals(n, remote.segment().get(ValueLayout.JAVA_LONG, 0));
    }

    /**
     * A rejected READ among requests in flight: those before it complete, it fails, those behind it flush — and none
     * of them touched the responder's memory, though they were already on their way.
     */
    @Test
    void aRejectedRequestAmongManyInFlightFlushesThoseBehindIt() {
        int before = 8;
        int behind = 8;
        MemoryRegion src = a.open(64, 0x11);
        MemoryRegion dst = b.open(64L * (before + behind + 1), 0x22);
        for (int i = 0; i < before + behind + 1; i++) {
            WorkRequest wr = i == before
                    ? WorkRequest.read(src, 0, 64).remote(dst.address(), dst.rkey() ^ 0x80)
                    : WorkRequest.write(src, 0, 64).remote(dst.address() + 64L * i, dst.rkey());
            a.qp.post(wr.wrId(i));
        }
        for (int i = 0; i < before; i++) assertEquals(i, a.expect(WcStatus.SUCCESS).wrId());
        assertEquals(before, a.expect(WcStatus.REM_ACCESS_ERR).wrId());
        for (int i = before + 1; i <= before + behind; i++) assertEquals(i, a.expect(WcStatus.WR_FLUSH_ERR).wrId());
        for (int i = 0; i < before; i++) assertEquals(0x11, dst.segment().get(ValueLayout.JAVA_BYTE, 64L * i));
        for (int i = before; i <= before + behind; i++) {
            assertEquals(-1, dst.segment().asSlice(64L * i, 64).mismatch(MemorySegment.ofArray(new byte[64]).fill((byte) 0x22)),
                    "request " + i + " touched nothing");
        }
        assertEquals(QpState.ERROR, a.qp.state());
        assertEquals(QpState.ERROR, b.qp.state());
    }

    @Test
    void aWrongRkeyIsRejectedWithoutTouchingMemoryAndBothQpsFail() {
        MemoryRegion src = a.open(64, 0x11);
        MemoryRegion dst = b.open(64, 0x22);
        a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey() ^ 0x80).wrId(5));
        WorkCompletion wc = a.expect(WcStatus.REM_ACCESS_ERR);
        assertEquals(5, wc.wrId());
        assertEquals(WcOpcode.RDMA_WRITE, wc.opcode(), "the opcode of a failed request is what was posted");
        assertEquals(0, wc.flags(), "a failed completion's flags are undefined in verbs: reported as none");
        assertUnchanged(dst, 0x22);
        assertEquals(QpState.ERROR, a.qp.state());
        assertEquals(QpState.ERROR, b.qp.state());
    }

    @Test
    void accessOutsideTheRegionIsRejected() {
        MemoryRegion src = a.open(64, 0x11);
        MemoryRegion dst = b.open(64, 0x22);
        a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address() + 1, dst.rkey()));
        a.expect(WcStatus.REM_ACCESS_ERR);
        assertUnchanged(dst, 0x22);
    }

    @Test
    void aRegionWithoutRemoteWriteRefusesWrites() {
        MemoryRegion src = a.open(64, 0x11);
        MemoryRegion dst = b.region(64, 0x22, Access.LOCAL_WRITE, Access.REMOTE_READ);
        a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()));
        a.expect(WcStatus.REM_ACCESS_ERR);
        assertUnchanged(dst, 0x22);
    }

    @Test
    void aRegionWithoutRemoteReadRefusesReads() {
        MemoryRegion into = a.open(64, 0x11);
        MemoryRegion dst = b.region(64, 0x22, Access.LOCAL_WRITE, Access.REMOTE_WRITE);
        a.qp.post(WorkRequest.read(into, 0, 64).remote(dst.address(), dst.rkey()));
        a.expect(WcStatus.REM_ACCESS_ERR);
        assertUnchanged(into, 0x11);
    }

    @Test
    void aRegionWithoutRemoteAtomicRefusesAtomics() {
        MemoryRegion result = a.open(8, 0);
        MemoryRegion dst = b.region(64, 0x22, Access.LOCAL_WRITE, Access.REMOTE_WRITE, Access.REMOTE_READ);
        a.qp.post(WorkRequest.fetchAndAdd(result, 0, dst.address(), dst.rkey(), 1));
        a.expect(WcStatus.REM_ACCESS_ERR);
        assertUnchanged(dst, 0x22);
    }

    @Test
    void aQpThatGrantsNoRemoteWriteRefusesWritesThroughIt() {
        b.qp.reset();
        a.qp.reset();
        var readOnly = FAST.toBuilder().access(EnumSet.of(Access.REMOTE_READ)).build();
        QpInfo ia = a.qp.info(FAST);
        QpInfo ib = b.qp.info(FAST);
        a.qp.connect(ib, FAST);
        b.qp.connect(ia, readOnly);
        MemoryRegion src = a.open(64, 0x11);
        MemoryRegion dst = b.open(64, 0x22);
        a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()));
        a.expect(expected(Deviation.QP_DENIES_REMOTE_WRITE, WcStatus.REM_ACCESS_ERR));
        assertUnchanged(dst, 0x22);
    }

    @Test
    void aRegionOfAnotherProtectionDomainIsUnreachable() {
        ProtectionDomain other = b.context.allocateProtectionDomain();
        MemoryRegion foreign = other.register(arena.allocate(64, 64), EnumSet.allOf(Access.class));
        MemoryRegion src = a.open(64, 0x11);
        a.qp.post(WorkRequest.write(src, 0, 64).remote(foreign.address(), foreign.rkey()));
        a.expect(WcStatus.REM_ACCESS_ERR);
        assertUnchanged(foreign, 0);
    }

    @Test
    void aBadLkeyFailsLocallyAndFlushesTheRest() {
        MemoryRegion src = a.open(64, 0x11);
        MemoryRegion dst = b.open(64, 0x22);
        a.qp.post(new WorkRequest().opcode(Opcode.RDMA_WRITE).localUnchecked(src.address(), 64, src.lkey() ^ 0x80)
                .remote(dst.address(), dst.rkey()).wrId(1));
        a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()).wrId(2).signaled(false));
        a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()).wrId(3));
        assertEquals(1, a.expect(expected(Deviation.BAD_LKEY, WcStatus.LOC_PROT_ERR)).wrId());
        assertEquals(2, a.expect(WcStatus.WR_FLUSH_ERR).wrId(), "unsignaled requests report their flush too");
        assertEquals(3, a.expect(WcStatus.WR_FLUSH_ERR).wrId());
        assertUnchanged(dst, 0x22);
        assertEquals(QpState.ERROR, a.qp.state());
        assertEquals(0, a.qp.outstandingSends());
    }

    @Test
    void readingIntoMemoryWithoutLocalWriteIsALocalProtectionError() {
        MemoryRegion readOnly = a.region(64, 0x11, Access.REMOTE_READ);
        MemoryRegion src = b.open(64, 0x22);
        a.qp.post(WorkRequest.read(readOnly, 0, 64).remote(src.address(), src.rkey()));
        a.expect(WcStatus.LOC_PROT_ERR);
        assertUnchanged(readOnly, 0x11);
    }

    @Test
    void postsAfterAnErrorAreFlushedAndReceivesToo() {
        MemoryRegion buf = a.open(64, 0);
        MemoryRegion in = b.open(64, 0);
        b.qp.post(ReceiveRequest.into(in, 0, 64).wrId(9));
        a.qp.moveToError();
        a.qp.post(WorkRequest.write(buf, 0, 8).remote(0, 0).wrId(4));
        assertEquals(4, a.expect(WcStatus.WR_FLUSH_ERR).wrId());
        b.qp.moveToError();
        WorkCompletion flushed = b.expect(WcStatus.WR_FLUSH_ERR);
        assertEquals(9, flushed.wrId());
        assertEquals(WcOpcode.RECV, flushed.opcode());
        a.qp.post(ReceiveRequest.into(buf, 0, 8).wrId(5));
        assertEquals(5, a.expect(WcStatus.WR_FLUSH_ERR).wrId());
    }

    // ---- receive queue rules ---------------------------------------------------------------------------------

    @Test
    void aSendWithoutAReceiveRetriesThenFailsWithRnr() {
        a.qp.reset();
        b.qp.reset();
        connect(FAST.toBuilder().rnrRetry(1).build());
        MemoryRegion out = a.open(16, 1);
        a.qp.post(WorkRequest.send(out, 0, 16));
        a.expect(WcStatus.RNR_RETRY_EXC_ERR);
    }

    @Test
    void aSendWaitsForAReceivePostedLater() throws Exception {
        MemoryRegion out = a.open(16, 1);
        MemoryRegion in = b.open(16, 0);
        a.qp.post(WorkRequest.send(out, 0, 16)); // rnr_retry 7: retried until a receive shows up
        Thread.sleep(20);
        b.qp.post(ReceiveRequest.into(in, 0, 16));
        a.expect(WcStatus.SUCCESS);
        b.expect(WcStatus.SUCCESS);
    }

    @Test
    void aSendLongerThanTheReceiveFailsOnBothSides() {
        MemoryRegion out = a.open(128, 1);
        MemoryRegion in = b.open(64, 0);
        b.qp.post(ReceiveRequest.into(in, 0, 64).wrId(3));
        a.qp.post(WorkRequest.send(out, 0, 128));
        a.expect(expected(Deviation.SEND_TOO_LONG_REQUESTER, WcStatus.REM_INV_REQ_ERR));
        assertEquals(3, b.expect(expected(Deviation.SEND_TOO_LONG_RESPONDER, WcStatus.LOC_LEN_ERR)).wrId());
        assertUnchanged(in, 0);
    }

    @Test
    void queuePairsRecoverFromErrorThroughResetAndReconnect() {
        MemoryRegion src = a.open(64, 0x11);
        MemoryRegion dst = b.open(64, 0);
        for (int round = 0; round < 20; round++) {
            a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey() ^ 0x80));
            a.expect(WcStatus.REM_ACCESS_ERR);
            assertEquals(QpState.ERROR, b.qp.state());
            a.qp.reset();
            b.qp.reset();
            connect(FAST);
            a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()).wrId(round));
            assertEquals(round, a.expect(WcStatus.SUCCESS).wrId(), "round " + round);
        }
    }

    @Test
    void reconnectingBeforeTheConnectionIsUpLeavesAWorkingOne() {
        MemoryRegion src = a.open(64, 0x11);
        MemoryRegion dst = b.open(64, 0);
        for (int round = 0; round < 30; round++) {
            for (int reconnect = 0; reconnect < 2; reconnect++) { // the first one's connection may still be coming up
                a.qp.reset();
                b.qp.reset();
                connect(FAST);
            }
            // A rejected access moves the responder to ERROR: were its answer lost, a retry would find no answer.
            boolean bad = round % 2 == 1;
            a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey() ^ (bad ? 0x80 : 0)).wrId(round));
            assertEquals(round, a.expect(bad ? WcStatus.REM_ACCESS_ERR : WcStatus.SUCCESS).wrId(), "round " + round);
        }
    }

    @Test
    void aPeerThatIsNotConnectedNeverAnswers() {
        b.qp.reset();
        MemoryRegion src = a.open(8, 1);
        MemoryRegion dst = b.open(8, 0);
        a.qp.post(WorkRequest.write(src, 0, 8).remote(dst.address(), dst.rkey()));
        a.expect(WcStatus.RETRY_EXC_ERR);
        assertUnchanged(dst, 0);
    }

    // ---- memory windows --------------------------------------------------------------------------------------

    @Test
    void aType2WindowExposesItsRangeUntilInvalidated() {
        MemoryRegion region = b.open(4096, 0);
        MemoryWindow window = b.pd.allocateWindow(MwType.TYPE_2);
        int before = window.rkey();
        b.qp.post(WorkRequest.bind(window, region, 1024, 512, EnumSet.of(Access.REMOTE_WRITE, Access.REMOTE_READ)));
        assertEquals(WcOpcode.BIND_MW, b.expect(WcStatus.SUCCESS).opcode());
        int key = window.rkey();
        assertTrue(window.isBound());
        assertEquals(before >>> 8, key >>> 8, "a type 2 bind keeps the index and changes the key byte");
        assertTrue(key != before);

        MemoryRegion src = a.open(512, 0x66);
        a.qp.post(WorkRequest.write(src, 0, 512).remote(region.address() + 1024, key));
        a.expect(WcStatus.SUCCESS);
        assertEquals(-1, region.segment().asSlice(1024, 512).mismatch(src.segment()));

        b.qp.post(WorkRequest.invalidate(key));
        assertEquals(WcOpcode.LOCAL_INV, b.expect(WcStatus.SUCCESS).opcode());
        assertFalse(window.isBound());
        region.segment().fill((byte) 0);
        a.qp.post(WorkRequest.write(src, 0, 512).remote(region.address() + 1024, key));
        a.expect(WcStatus.REM_ACCESS_ERR); // the late write of an ended exposure
        assertUnchanged(region, 0);
    }

    /** On a device that does not enforce window bounds (rxe), the same write is asserted to land, all of it. */
    @Test
    void aWindowConfinesAccessToItsRange() {
        MemoryRegion region = b.open(4096, 0);
        MemoryWindow window = b.pd.allocateWindow(MwType.TYPE_2);
        b.qp.post(WorkRequest.bind(window, region, 1024, 512, EnumSet.of(Access.REMOTE_WRITE)));
        b.expect(WcStatus.SUCCESS);
        MemoryRegion src = a.open(16, 0x66);
        long across = 1024 + 512 - 8; // 8 bytes inside the window, 8 past its end
        a.qp.post(WorkRequest.write(src, 0, 16).remote(region.address() + across, window.rkey()));
        if (enforcesWindowBounds()) {
            a.expect(WcStatus.REM_ACCESS_ERR);
            assertUnchanged(region, 0);
        } else {
            a.expect(WcStatus.SUCCESS);
            assertEquals(-1, region.segment().asSlice(across, 16).mismatch(src.segment()));
        }
    }

    @Test
    void aWindowGrantsOnlyItsRights() {
        MemoryRegion region = b.open(64, 0);
        MemoryWindow window = b.pd.allocateWindow(MwType.TYPE_2);
        b.qp.post(WorkRequest.bind(window, region, 0, 64, EnumSet.of(Access.REMOTE_READ)));
        b.expect(WcStatus.SUCCESS);
        MemoryRegion src = a.open(64, 0x66);
        a.qp.post(WorkRequest.write(src, 0, 64).remote(region.address(), window.rkey()));
        a.expect(WcStatus.REM_ACCESS_ERR);
        assertUnchanged(region, 0);
    }

    @Test
    void bindingOverARegionWithoutMwBindFails() {
        MemoryRegion region = b.region(64, 0, Access.LOCAL_WRITE, Access.REMOTE_WRITE);
        MemoryWindow window = b.pd.allocateWindow(MwType.TYPE_2);
        b.qp.post(WorkRequest.bind(window, region, 0, 64, EnumSet.of(Access.REMOTE_WRITE)));
        b.expect(WcStatus.MW_BIND_ERR);
        assertFalse(window.isBound());
    }

    @Test
    void aType1WindowIsBoundThroughAQpToo() {
        MemoryRegion region = b.open(256, 0);
        MemoryWindow window = b.pd.allocateWindow(MwType.TYPE_1);
        b.qp.post(WorkRequest.bind(window, region, 0, 128, EnumSet.of(Access.REMOTE_WRITE)));
        b.expect(WcStatus.SUCCESS);
        MemoryRegion src = a.open(128, 0x21);
        a.qp.post(WorkRequest.write(src, 0, 128).remote(region.address(), window.rkey()));
        a.expect(WcStatus.SUCCESS);
        assertEquals(-1, region.segment().asSlice(0, 128).mismatch(src.segment()));
    }

    /**
     * Binds of a window posted back to back carry different keys, as {@code ibv_bind_mw} gives each the next one when
     * it posts: the key of the first binding, handed to a peer, must not reach the range of the second. Both took the
     * key after the last completed bind, so they carried the same one.
     */
    @Test
    void aType1WindowReboundBeforeItsBindCompletedGetsANewKey() {
        MemoryRegion region = b.open(256, 0);
        MemoryWindow window = b.pd.allocateWindow(MwType.TYPE_1);
        b.qp.post(WorkRequest.bind(window, region, 0, 64, EnumSet.of(Access.REMOTE_WRITE)).wrId(1));
        b.qp.post(WorkRequest.bind(window, region, 128, 64, EnumSet.of(Access.REMOTE_WRITE)).wrId(2));
        assertEquals(1, b.expect(WcStatus.SUCCESS).wrId());
        int first = window.rkey();
        assertEquals(2, b.expect(WcStatus.SUCCESS).wrId());
        int second = window.rkey();
        assertNotEquals(first, second, "each bind gives the window a new key");
        MemoryRegion src = a.open(64, 0x21);
        a.qp.post(WorkRequest.write(src, 0, 64).remote(region.address() + 128, first));
        a.expect(WcStatus.REM_ACCESS_ERR); // the first binding's key reaches nothing any more
        assertUnchanged(region, 0);
    }

    /**
     * A bound window keeps its region registered (ibv_dereg_mr would say EBUSY) and, type 2, the QP it was bound
     * through (rxe's destroy would wait for the window's reference, then warn): the graph defers both closes.
     */
    @Test
    void aBoundWindowKeepsItsRegionAndItsQpUntilTheWindowGoes() {
        MemoryRegion region = b.open(64, 0);
        MemoryWindow window = b.pd.allocateWindow(MwType.TYPE_2);
        b.qp.post(WorkRequest.bind(window, region, 0, 64, EnumSet.of(Access.REMOTE_WRITE)));
        b.expect(WcStatus.SUCCESS);
        region.close();
        b.qp.close();
        assertEquals(ResourceState.CLOSING, region.resource().state());
        assertEquals(ResourceState.CLOSING, b.qp.resource().state());
        window.close();
        assertEquals(ResourceState.DESTROYED, region.resource().state());
        assertEquals(ResourceState.DESTROYED, b.qp.resource().state());
    }

    @Test
    void aDeallocatedWindowCannotBeBound() {
        MemoryRegion region = b.open(64, 0);
        MemoryWindow window = b.pd.allocateWindow(MwType.TYPE_2);
        window.close();
        assertThrows(ResourceClosedException.class,
                () -> b.qp.post(WorkRequest.bind(window, region, 0, 64, EnumSet.of(Access.REMOTE_WRITE))));
        assertEquals(0, b.qp.outstandingSends(), "a refused bind leaves nothing behind");
        region.close();
        assertEquals(ResourceState.DESTROYED, region.resource().state());
    }

    /** A BIND_MW request made with opcode() instead of WorkRequest.bind failed with a NullPointerException. */
    @Test
    void aBindWithoutItsWindowIsRefusedNamingWhatIsMissing() {
        var e = assertThrows(IllegalArgumentException.class, () -> b.qp.post(new WorkRequest().opcode(Opcode.BIND_MW)));
        assertTrue(e.getMessage().contains("WorkRequest.bind"), e.getMessage());
        assertEquals(0, b.qp.outstandingSends(), "a refused bind leaves nothing behind");
        assertEquals(QpState.RTS, b.qp.state());
    }

    @Test
    void aWindowIsDeallocatedOnlyAfterItsOutstandingBind() {
        MemoryRegion region = b.open(64, 0);
        MemoryWindow window = b.pd.allocateWindow(MwType.TYPE_2);
        b.qp.post(WorkRequest.bind(window, region, 0, 64, EnumSet.of(Access.REMOTE_WRITE)));
        window.close();
        assertEquals(ResourceState.CLOSING, window.resource().state(), "the bind holds it until it completes");
        b.expect(WcStatus.SUCCESS);
        assertEquals(ResourceState.DESTROYED, window.resource().state());
        region.close();
        assertEquals(ResourceState.DESTROYED, region.resource().state(), "the window let go of the region");
    }

    // ---- queue pair rules ------------------------------------------------------------------------------------

    @Test
    void transitionsANicRefusesAreRefusedNamingTheState() {
        var e = assertThrows(QpStateException.class, () -> a.qp.init(FAST));
        assertEquals(QpState.RTS, e.state());
        assertTrue(e.getMessage().contains("moving to INIT is not allowed in state RTS"), e.getMessage());
        assertTrue(e.getMessage().contains("EINVAL"), e.getMessage());
        a.qp.reset();
        var fromReset = assertThrows(QpStateException.class, () -> a.qp.readyToSend(FAST));
        assertEquals(QpState.RESET, fromReset.state());
        assertTrue(fromReset.getMessage().contains("state RESET"), fromReset.getMessage());
        MemoryRegion buf = a.open(8, 0);
        var post = assertThrows(QpStateException.class, () -> a.qp.post(WorkRequest.send(buf, 0, 8)));
        assertTrue(post.getMessage().contains("ibv_post_send"), post.getMessage());
        assertThrows(QpStateException.class, () -> a.qp.post(ReceiveRequest.into(buf, 0, 8)));
        assertEquals(0, a.qp.outstandingSends(), "a refused post leaves nothing behind");
        a.qp.init(FAST);
        assertEquals(QpState.INIT, a.qp.state());
        a.qp.moveToError();
        assertThrows(QpStateException.class, () -> a.qp.init(FAST));
    }

    @Test
    void postingPastTheQueueDepthIsRefusedNotBlocked() {
        a.qp.moveToError(); // nothing will complete until polled
        MemoryRegion buf = a.open(8, 0);
        int depth = a.qp.capabilities().maxSendWr();
        for (int i = 0; i < depth; i++) a.qp.post(WorkRequest.write(buf, 0, 8).wrId(i));
        var e = assertThrows(QueueFullException.class, () -> a.qp.post(WorkRequest.write(buf, 0, 8)));
        assertTrue(e.getMessage().contains("ENOMEM"), e.getMessage());
        for (int i = 0; i < depth; i++) assertEquals(i, a.expect(WcStatus.WR_FLUSH_ERR).wrId());
        a.qp.post(WorkRequest.write(buf, 0, 8).wrId(depth));
        assertEquals(depth, a.expect(WcStatus.WR_FLUSH_ERR).wrId());
    }

    @Test
    void unsignaledRequestsAreRetiredByTheNextSignaledOne() {
        MemoryRegion src = a.open(8, 1);
        MemoryRegion dst = b.open(8, 0);
        for (int i = 0; i < 5; i++) {
            a.qp.post(WorkRequest.write(src, 0, 8).remote(dst.address(), dst.rkey()).signaled(false));
        }
        a.qp.post(WorkRequest.write(src, 0, 8).remote(dst.address(), dst.rkey()).wrId(99));
        assertEquals(99, a.expect(WcStatus.SUCCESS).wrId());
        a.expectNothing();
        assertEquals(0, a.qp.outstandingSends());
    }

    /**
     * A poll into an array with an empty slot is refused before it takes anything. It took the completion, retired its
     * request and then failed with a NullPointerException: the completion was lost.
     */
    @Test
    void aPollIntoAnArrayWithoutInstancesIsRefusedAndLosesNothing() {
        MemoryRegion src = a.open(8, 1);
        MemoryRegion dst = b.open(8, 0);
        a.qp.post(WorkRequest.write(src, 0, 8).remote(dst.address(), dst.rkey()).wrId(5));
        long deadline = System.nanoTime() + Endpoint.WAIT.toNanos();
        while (dst.segment().get(ValueLayout.JAVA_BYTE, 0) != 1 && System.nanoTime() < deadline) Thread.onSpinWait();
        WorkCompletion[] empty = new WorkCompletion[2];
        var e = assertThrows(IllegalArgumentException.class, () -> a.cq.poll(empty));
        assertTrue(e.getMessage().contains("into[0] is null"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> a.cq.poll(empty, Duration.ofMillis(10)));
        assertEquals(5, a.expect(WcStatus.SUCCESS).wrId(), "the completion is still there");
        assertEquals(0, a.qp.outstandingSends());
    }

    /**
     * A completion event raised for a CQ armed by an earlier timed poll, whose completion was then taken by a
     * plain poll, is stale: a later timed poll that finds it must still wait out its timeout (it returned 0
     * at once, and the remote-lease isolation probe failed on that).
     */
    @Test
    void aTimedPollWaitsItsFullTimeoutDespiteAStaleEvent() throws Exception {
        WorkCompletion[] one = {new WorkCompletion()};
        assertEquals(0, a.cq.poll(one, Duration.ofMillis(1)), "nothing posted yet"); // leaves the CQ armed
        MemoryRegion src = a.open(8, 1);
        MemoryRegion dst = b.open(8, 0);
        a.qp.post(WorkRequest.write(src, 0, 8).remote(dst.address(), dst.rkey()));
        long deadline = System.nanoTime() + Endpoint.WAIT.toNanos();
        while (a.cq.poll(one) == 0) { // its completion raised the event; taken without waiting, the event stays
            assertTrue(System.nanoTime() < deadline, "the write did not complete within " + Endpoint.WAIT);
            Thread.onSpinWait();
        }
        assertEquals(WcStatus.SUCCESS, one[0].status());
        Duration timeout = Duration.ofMillis(300);
        long start = System.nanoTime();
        assertEquals(0, a.cq.poll(one, timeout));
        long waited = System.nanoTime() - start;
        assertTrue(waited >= timeout.toNanos(), "a timed poll returned 0 after " + waited + " ns of " + timeout);
    }

    @Test
    void asyncPostsCompleteTheirFuturesThroughTheDispatcher() throws Exception {
        List<WorkCompletion> others = new CopyOnWriteArrayList<>();
        a.cq.startDispatcher(CompletionDispatcher.Mode.EVENTS, others::add);
        b.cq.startDispatcher(CompletionDispatcher.Mode.BUSY_POLL, others::add);
        MemoryRegion src = a.open(64, 0x31);
        MemoryRegion dst = b.open(64, 0);
        MemoryRegion result = a.open(8, 0);

        List<CompletableFuture<WorkCompletion>> futures = new ArrayList<>();
        List<Thread> posters = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            int id = t;
            posters.add(Thread.ofVirtual().start(() -> {
                for (int i = 0; i < 10; i++) {
                    futures.add(a.qp.postAsync(WorkRequest.fetchAndAdd(result, 0, dst.address(), dst.rkey(), 1)
                            .wrId(id * 100 + i)));
                }
            }));
        }
        for (Thread p : posters) p.join();
        for (var f : futures) assertEquals(WcStatus.SUCCESS, f.get().status());
        assertEquals(40, dst.segment().get(ValueLayout.JAVA_LONG, 0));

        var write = a.qp.postAsync(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()));
        assertEquals(WcOpcode.RDMA_WRITE, write.join().opcode());
        var bad = a.qp.postAsync(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey() ^ 0x80).wrId(5));
        var failure = assertThrows(CompletionException.class, bad::join);
        var wce = (WorkCompletionException) failure.getCause();
        assertEquals(WcStatus.REM_ACCESS_ERR, wce.status());
        assertEquals(5, wce.completion().wrId());
        assertTrue(others.isEmpty(), () -> "async completions are not handed out twice: " + others);
        assertThrows(IllegalStateException.class, () -> a.cq.poll(new WorkCompletion[1]));
    }

    /**
     * A handler that throws an Error (an assertion in application code, a stack overflow) stops nothing: the rest of
     * the CQ's completions — and every future on it — depend on the thread that delivers. Before, the Error killed the
     * dispatcher's thread, or came out of an unrelated caller's wait that delivered it (here the write's get).
     */
    @Test
    void aHandlerThatThrowsAnErrorStopsNoDispatcher() throws Exception {
        List<WorkCompletion> handled = new CopyOnWriteArrayList<>();
        a.cq.startDispatcher(CompletionDispatcher.Mode.EVENTS, wc -> {
            if (wc.wrId() == 1) throw new AssertionError("the application's handler failed on " + wc);
            handled.add(wc);
        });
        MemoryRegion src = a.open(64, 0x31);
        MemoryRegion dst = b.open(64, 0);
        a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()).wrId(1));
        a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()).wrId(2));
        var write = a.qp.postAsync(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()).wrId(3));
        assertEquals(WcStatus.SUCCESS, write.get(10, java.util.concurrent.TimeUnit.SECONDS).status());
        long deadline = System.nanoTime() + Endpoint.WAIT.toNanos();
        while (handled.isEmpty() && System.nanoTime() < deadline) Thread.sleep(1);
        assertEquals(List.of(2L), handled.stream().map(WorkCompletion::wrId).toList());
    }

    @Test
    void aWaitingPlatformThreadPollsForItsOwnCompletions() throws Exception {
        List<WorkCompletion> others = new CopyOnWriteArrayList<>();
        var never = new CompletableFuture<WorkCompletion>();
        var refusal = new CompletableFuture<Throwable>();
        a.cq.startDispatcher(CompletionDispatcher.Mode.EVENTS, wc -> {
            if (wc.wrId() == 79) { // where completions are delivered, a wait is refused
                try {
                    a.cq.await(never, Duration.ofMillis(1));
                    refusal.complete(null);
                } catch (Throwable t) {
                    refusal.complete(t);
                }
            }
            others.add(wc);
        });
        int rounds = 200;
        int deliveredHere = IntStream.of(writesDeliveredToTheirWaiter(rounds, (i, write) -> {
            a.cq.await(write, Duration.ofSeconds(10));
            return write.join();
        })).sum();
        // Only calls that find the dispatcher asleep in the CQ (the first; any after a descheduling) are served by it:
        // soft has 195-199 of 200 polled here. On emulated CPUs — rxe in the VM under TCG, whose vCPUs run in turn —
        // threads often miss the dispatcher's 1 ms linger, and only the mechanism can be asked for: 40-183 of 200 seen.
        // Without the polling wait: 0.
        int atLeast = EmulatedCpus.inUse() ? 0 : rounds / 2;
        assertTrue(deliveredHere > atLeast, deliveredHere + " of " + rounds + " completions woke their own waiter");
        assertFalse(CompletionDispatcher.isDispatcherThread(), "delivering ends with the wait");

        assertFalse(a.cq.await(never, Duration.ofMillis(5)), "a wait that runs out says the future is not done");

        // What nobody waits for goes to the handler, also while the dispatcher stands aside for a waiter.
        MemoryRegion src = a.open(64, 0x31);
        MemoryRegion dst = b.open(64, 0);
        MemoryRegion in = b.open(64, 0);
        b.qp.post(ReceiveRequest.into(in, 0, 64).wrId(77));
        a.qp.post(WorkRequest.send(src, 0, 64).wrId(78));
        a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()).wrId(79));
        Throwable refused = refusal.get(10, java.util.concurrent.TimeUnit.SECONDS);
        assertTrue(refused instanceof WrongThreadException && refused.getMessage().contains("delivers completions"),
                String.valueOf(refused));
        assertTrue(others.stream().anyMatch(wc -> wc.wrId() == 78 && wc.status() == WcStatus.SUCCESS), others::toString);
        b.expect(WcStatus.SUCCESS);
    }

    /**
     * An idle thread lends itself to delivery ({@link IdleDelivery}, a Netty loop's way): what comes while it polls is
     * delivered on it — where a wait is refused, as on the dispatcher's thread — and the dispatcher's thread stands
     * aside. A wake from another thread ends its turn at once: one under way (asleep in the CQ: soft's semaphore, ibv's
     * eventfd), one that comes before the turn (it is kept), and the dispatcher's close.
     */
    @Test
    void anIdleThreadDeliversOnItselfUntilWoken() throws Exception {
        List<Thread> handledOn = new CopyOnWriteArrayList<>();
        var refusal = new CompletableFuture<Throwable>();
        var never = new CompletableFuture<WorkCompletion>();
        CompletionDispatcher d = a.cq.startDispatcher(CompletionDispatcher.Mode.EVENTS, wc -> {
            if (!refusal.isDone() && !Thread.currentThread().getName().startsWith("mooring-dispatcher")) {
                try {
                    a.cq.await(never, Duration.ofMillis(1));
                    refusal.complete(null);
                } catch (Throwable t) {
                    refusal.complete(t);
                }
            }
            handledOn.add(Thread.currentThread());
        });
        IdleDelivery idle = d.idleDelivery();
        long minute = Duration.ofMinutes(1).toNanos();
        var stop = new AtomicBoolean();
        Thread loop = Thread.ofPlatform().name("idle-loop").start(() -> {
            try {
                while (!stop.get()) idle.deliverFor(minute); // only a delivery or a wake ends a turn
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        MemoryRegion src = a.open(64, 0x31);
        MemoryRegion dst = b.open(64, 0);
        int rounds = 50;
        for (int i = 0; i < rounds; i++) {
            Thread.sleep(2); // the loop is idle: it polls
            a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()).wrId(i));
            long deadline = System.nanoTime() + Endpoint.WAIT.toNanos();
            while (handledOn.size() <= i && System.nanoTime() < deadline) Thread.sleep(1);
        }
        assertEquals(rounds, handledOn.size());
        long onTheLoop = handledOn.stream().filter(t -> t == loop).count();
        // Soft: 50 of 50. Without idle delivery: 0. On emulated CPUs (rxe under TCG) only the mechanism is asked for.
        assertTrue(onTheLoop > (EmulatedCpus.inUse() ? 0 : rounds / 2),
                onTheLoop + " of " + rounds + " on the idle thread");
        Throwable refused = refusal.get(10, java.util.concurrent.TimeUnit.SECONDS);
        assertInstanceOf(WrongThreadException.class, refused, String.valueOf(refused));

        stop.set(true);
        idle.wake();
        loop.join(Duration.ofSeconds(10));
        assertFalse(loop.isAlive(), "a wake did not end the idle turn");

        idle.wake(); // kept for the next turn, which ends at once
        assertEquals(0, idle.deliverFor(minute));

        var closing = new AtomicBoolean();
        Thread closed = Thread.ofPlatform().start(() -> {
            try {
                while (!closing.get()) idle.deliverFor(minute);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        });
        // A turn that found the dispatcher's thread not yet gone from the CQ (an emulated CPU is slower to let go than
        // the linger it is given) parks instead: it is woken to try again, until one sleeps in the CQ.
        for (long nudged = System.nanoTime(); !idle.inCq; Thread.sleep(1)) {
            if (System.nanoTime() - nudged > Duration.ofMillis(100).toNanos()) {
                idle.wake();
                nudged = System.nanoTime();
            }
        }
        closing.set(true);
        d.close();
        closed.join(Duration.ofSeconds(10));
        assertFalse(closed.isAlive(), "closing the dispatcher did not end the idle turn");
    }

    /**
     * A wait the dispatcher served — it found the dispatcher asleep in the CQ, and its completion came later than the
     * dispatcher's linger — leaves the next one polling for itself: the dispatcher stands aside after serving a
     * platform caller as after one that polled. Before, it went back to sleep in the CQ and served the next wait too,
     * and so on for as long as each took longer than the linger (0 of 20 next waits polled for themselves).
     */
    @Test
    void aWaitTheDispatcherServedLeavesTheNextPollingForItself() throws Exception {
        a.cq.startDispatcher(CompletionDispatcher.Mode.EVENTS, wc -> { });
        MemoryRegion src = a.open(64, 0x31);
        MemoryRegion dst = b.open(64, 0);
        MemoryRegion in = a.open(64, 0);
        MemoryRegion out = b.open(64, 0x32);
        int rounds = 20;
        int served = 0;
        int nextPolledHere = 0;
        for (int i = 0; i < rounds; i++) {
            Thread.sleep(5); // well past the linger: the dispatcher sleeps in the CQ
            var received = a.qp.postAsync(ReceiveRequest.into(in, 0, 64));
            Thread sender = Thread.ofPlatform().start(() -> {
                LockSupport.parkNanos(Duration.ofMillis(5).toNanos()); // the completion comes after the linger
                b.qp.post(WorkRequest.send(out, 0, 64));
            });
            var receivedHere = deliveredToItsWaiter(received);
            a.cq.await(received, Duration.ofSeconds(10));
            boolean wasServed = !receivedHere.join(); // unless the dispatcher had not gone to sleep yet
            var write = a.qp.postAsync(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()));
            var writtenHere = deliveredToItsWaiter(write);
            a.cq.await(write, Duration.ofSeconds(10));
            assertEquals(WcStatus.SUCCESS, write.join().status());
            if (wasServed) served++;
            if (wasServed && writtenHere.join()) nextPolledHere++;
            sender.join();
            b.expect(WcStatus.SUCCESS);
        }
        // Soft: 19-20 of 20. Fewer where threads wake later than the linger: 9-15 of 20 on rxe under TCG.
        assertTrue(served > 0 && nextPolledHere > 0, nextPolledHere + " of " + served + " waits after a served one polled");
    }

    /**
     * Requests outstanding when their QP is reset or closed never complete: their futures fail with a type a caller
     * branches on — a {@link QpResetException} naming the QP after a reset (post them again on the next connection),
     * a {@link ResourceClosedException} naming it after its close.
     */
    @Test
    void requestsOfAResetOrClosedQpFailTyped() {
        var discarded = b.qp.postAsync(ReceiveRequest.into(b.open(64, 0), 0, 64));
        b.qp.reset();
        var reset = assertThrows(CompletionException.class, discarded::join);
        var why = assertInstanceOf(QpResetException.class, reset.getCause());
        assertTrue(why.getMessage().contains(b.qp.toString()), why::getMessage);

        var orphan = a.qp.postAsync(ReceiveRequest.into(a.open(64, 0), 0, 64));
        a.qp.close();
        var closed = assertThrows(CompletionException.class, orphan::join);
        var gone = assertInstanceOf(ResourceClosedException.class, closed.getCause());
        assertTrue(gone.getMessage().startsWith("qpn " + a.qp.number() + " was destroyed"), gone::getMessage);
    }

    /**
     * A plain {@code get} or {@code join} on a posted request's future — or on a stage derived from it — waits as
     * {@link CompletionQueue#await} does. Before, it parked until the dispatcher came round, which, standing aside
     * for a caller that had just polled, could be a whole nap (1 ms) after the completion had arrived.
     */
    @Test
    void aPlainGetOrJoinOnAPostedFuturePollsForItself() throws Exception {
        var getInCallback = new CompletableFuture<Throwable>();
        var pending = new CompletableFuture<CompletableFuture<WorkCompletion>>();
        a.cq.startDispatcher(CompletionDispatcher.Mode.EVENTS, wc -> {
            try {
                pending.join().get();
                getInCallback.complete(null);
            } catch (Throwable t) {
                getInCallback.complete(t);
            }
        });
        // Plain waits in the odd rounds, await in the even ones: how often a wait polls for itself depends on the
        // machine (a completion slower than the caller's poll, or a caller slower between rounds than the dispatcher's
        // linger, is served by the dispatcher — rxe under emulation), so the plain ones are held to await's count.
        int rounds = 400;
        int[] deliveredHere = writesDeliveredToTheirWaiter(rounds, (i, write) -> switch (i % 8) {
            case 1 -> write.get();
            case 3 -> write.join();
            case 5 -> write.get(10, java.util.concurrent.TimeUnit.SECONDS);
            case 7 -> write.thenApply(w -> w).join(); // a derived stage waits the same way
            default -> {
                a.cq.await(write, Duration.ofSeconds(10));
                yield write.join();
            }
        });
        // Without the polling wait, the dispatcher delivers every plain one: 0 of 200.
        assertTrue(deliveredHere[1] > 0 && deliveredHere[1] >= deliveredHere[0] / 2, deliveredHere[1] + " of "
                + rounds / 2 + " plain waits polled for themselves, against " + deliveredHere[0] + " of await's");

        // In a callback, a wait for a completion only that thread could deliver is refused, not a hang.
        pending.complete(a.qp.postAsync(ReceiveRequest.into(a.open(64, 0), 0, 64))); // nothing is sent to it
        MemoryRegion dst = b.open(64, 0);
        a.qp.post(WorkRequest.write(a.open(64, 0x32), 0, 64).remote(dst.address(), dst.rkey()).wrId(80));
        Throwable refused = getInCallback.get(10, java.util.concurrent.TimeUnit.SECONDS);
        assertTrue(refused instanceof WrongThreadException, String.valueOf(refused));
    }

    /**
     * A wait that times out stops counting as one the dispatcher must serve. Before, only the future's completion
     * counted it down, so a timed-out wait on a future still pending kept the dispatcher in the CQ for good, and no
     * caller polled for itself again.
     */
    @Test
    void aTimedOutWaitLeavesCallersPollingForThemselves() throws Exception {
        a.cq.startDispatcher(CompletionDispatcher.Mode.EVENTS, wc -> { });
        int rounds = 200;
        WriteWait join = (i, write) -> write.join();
        int before = IntStream.of(writesDeliveredToTheirWaiter(rounds, join)).sum(); // what this machine manages
        var pending = a.qp.postAsync(ReceiveRequest.into(a.open(64, 0), 0, 64)); // nothing is sent to it
        // Long enough to outlast the caller's own polling (8 ms) and park as one waiting to be served.
        assertThrows(java.util.concurrent.TimeoutException.class,
                () -> pending.get(30, java.util.concurrent.TimeUnit.MILLISECONDS));
        int after = IntStream.of(writesDeliveredToTheirWaiter(rounds, join)).sum();
        // The bug leaves none at all; how many a working machine manages varies by round under rxe's emulation
        // (181 before, 87 after in one CI run), so the bound is loose.
        assertTrue(after > 0 && after >= before / 4, after + " of " + rounds + " waits polled for themselves after "
                + "the timed-out one, " + before + " before it");
        assertFalse(pending.isDone());
    }

    /** How a test waits, on this thread, for the WRITE of round {@code round}. */
    private interface WriteWait {
        WorkCompletion await(int round, CompletableFuture<WorkCompletion> write) throws Exception;
    }

    /**
     * Posts {@code rounds} WRITEs one after the other, each waited for by {@code wait}, and counts those this thread
     * delivered while it polled — not the dispatcher, and not a future merely done before its check was chained — in
     * the even rounds and in the odd ones.
     */
    private int[] writesDeliveredToTheirWaiter(int rounds, WriteWait wait) throws Exception {
        MemoryRegion src = a.open(64, 0x31);
        MemoryRegion dst = b.open(64, 0);
        int[] deliveredHere = new int[2];
        for (int i = 0; i < rounds; i++) {
            var write = a.qp.postAsync(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()));
            var here = deliveredToItsWaiter(write);
            assertEquals(WcStatus.SUCCESS, wait.await(i, write).status());
            if (here.join()) deliveredHere[i % 2]++;
        }
        return deliveredHere;
    }

    /** Whether {@code f} is completed by a caller polling for itself (chain it before {@code f} can complete). */
    private static CompletableFuture<Boolean> deliveredToItsWaiter(CompletableFuture<WorkCompletion> f) {
        return f.thenApply(wc -> CompletionDispatcher.isDispatcherThread()
                && !Thread.currentThread().getName().startsWith("mooring-dispatcher"));
    }

    // ---- lifecycle -------------------------------------------------------------------------------------------

    @Test
    void closingParentsFirstNeverSurfacesEbusy() {
        MemoryRegion src = a.open(64, 1);
        MemoryRegion dst = b.open(64, 0);
        a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()));
        a.expect(WcStatus.SUCCESS);
        a.context.close();
        a.pd.close();
        a.cq.close();
        src.close();
        assertEquals(io.mooring.lifecycle.ResourceState.CLOSING, a.context.resource().state());
        a.qp.close();
        assertEquals(io.mooring.lifecycle.ResourceState.DESTROYED, a.context.resource().state());
        assertEquals(List.of(), graph.failures());
    }

    @Test
    void aRegionInUseByAnOutstandingRequestIsDeregisteredOnlyAfterIt() {
        MemoryRegion in = b.open(64, 0);
        b.qp.post(ReceiveRequest.into(in, 0, 64));
        in.close();
        assertEquals(io.mooring.lifecycle.ResourceState.CLOSING, in.resource().state(), "the receive holds it");
        MemoryRegion out = a.open(64, 9);
        a.qp.post(WorkRequest.send(out, 0, 64));
        a.expect(WcStatus.SUCCESS);
        b.expect(WcStatus.SUCCESS);
        assertEquals(io.mooring.lifecycle.ResourceState.DESTROYED, in.resource().state());
    }

    // ---- attributes and PSNs --------------------------------------------------------------------------------

    /**
     * A QP reused after a reset must not start from its old PSN: packets of the old connection still in the fabric
     * would fall into the new one's sequence (the PSN was drawn once at creation, so a reset QP reused it).
     */
    @Test
    void aQpResetAndReconnectedSendsFromANewPsn() {
        int first = a.qp.info(FAST).psn();
        assertEquals(first, a.qp.query().sendPsn(), "connected from the PSN its info gave the peer");
        assertEquals(first, b.qp.query().receivePsn(), "which the peer expects");
        assertAWriteLands();

        a.qp.reset();
        b.qp.reset();
        int second = a.qp.info(FAST).psn();
        assertNotEquals(first, second, "a reset draws a new PSN");
        connect(FAST);
        assertEquals(second, a.qp.query().sendPsn());
        assertEquals(second, b.qp.query().receivePsn());
        assertAWriteLands();
    }

    /**
     * A drained send queue resumes where it stopped: readyToSend from SQD set the send PSN back to the connection's
     * first, so the peer took every later request for a retransmission, acknowledged it and dropped it — the writes
     * succeeded without landing.
     */
    @Test
    void aDrainedQpResumesFromItsPsnAndItsWritesLand() {
        assertAWriteLands();
        int next = a.qp.query().sendPsn();
        a.qp.drainSendQueue();
        assertEquals(QpState.SQD, a.qp.state());
        a.qp.readyToSend(FAST);
        assertEquals(QpState.RTS, a.qp.state());
        assertEquals(next, a.qp.query().sendPsn(), "resumed from the next PSN");
        assertAWriteLands();
        a.qp.readyToSend(FAST); // RTS -> RTS leaves the PSN alone too
        assertEquals((next + 1) & QpAttributes.MAX_PSN, a.qp.query().sendPsn());
        assertAWriteLands();
    }

    /** A chosen PSN goes to the peer in QpInfo and is where sending starts; sequences wrap at 24 bits. */
    @Test
    void aChosenPsnIsHandedToThePeerAndSequencesWrapAt24Bits() {
        a.qp.reset();
        b.qp.reset();
        int nearTheEnd = QpAttributes.MAX_PSN - 1;
        ConnectOptions fromA = FAST.toBuilder().sendPsn(nearTheEnd).build();
        ConnectOptions fromB = FAST.toBuilder().sendPsn(7).build();
        QpInfo ia = a.qp.info(fromA);
        QpInfo ib = b.qp.info(fromB);
        assertEquals(nearTheEnd, ia.psn());
        assertEquals(7, ib.psn());
        a.qp.connect(ib, fromA);
        b.qp.connect(ia, fromB);
        assertEquals(nearTheEnd, a.qp.query().sendPsn());
        assertEquals(nearTheEnd, b.qp.query().receivePsn());
        assertEquals(7, b.qp.query().sendPsn());
        assertEquals(7, a.qp.query().receivePsn());

        MemoryRegion src = a.open(8, 0);
        MemoryRegion dst = b.open(8, 0);
        for (int i = 1; i <= 4; i++) { // one packet each: PSNs 0xfffffe, 0xffffff, 0, 1
            src.segment().fill((byte) i);
            a.qp.post(WorkRequest.write(src, 0, 8).remote(dst.address(), dst.rkey()).wrId(i));
            assertEquals(i, a.expect(WcStatus.SUCCESS).wrId());
        }
        assertEquals(2, a.qp.query().sendPsn(), "the next PSN, past the wrap");
        assertEquals(2, b.qp.query().receivePsn());
        assertEquals(-1, src.segment().mismatch(dst.segment()), "the last write landed");
    }

    @Test
    void queryReportsWhatTheConnectionSet() {
        a.qp.reset();
        b.qp.reset();
        // READ/atomic depths are powers of 2: rxe and mlx5 round them up
        ConnectOptions options = FAST.toBuilder().access(EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE))
                .ackTimeout(Duration.ofMillis(16)).retryCount(3).rnrRetry(5).minRnrTimer(Duration.ofNanos(20_000))
                .maxRdAtomic(4).maxDestRdAtomic(8)
                .trafficClass(32).serviceLevel(3).hopLimit(17).build();
        QpInfo ia = a.qp.info(options);
        QpInfo ib = b.qp.info(options);
        a.qp.connect(ib, options);
        b.qp.connect(ia, options);

        QpAttributes q = a.qp.query();
        assertEquals(QpState.RTS, q.state());
        assertEquals(EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE), q.access());
        assertEquals(1, q.port());
        assertEquals(0, q.pkeyIndex());
        assertEquals(ia.mtu().bytes() < ib.mtu().bytes() ? ia.mtu() : ib.mtu(), q.pathMtu());
        assertEquals(b.qp.number(), q.destQpNumber());
        assertEquals(ib.psn(), q.receivePsn());
        assertEquals(ia.psn(), q.sendPsn());
        assertEquals(4, q.maxRdAtomic());
        assertEquals(8, q.maxDestRdAtomic());
        assertEquals(2, q.minRnrTimerCode(), "20 µs is RNR code 2");
        assertEquals(12, q.ackTimeoutCode(), "16 ms rounds up to 4.096 µs × 2^12");
        assertEquals(3, q.retryCount());
        assertEquals(5, q.rnrRetry());
        assertEquals(ib.gid(), q.destGid());
        assertEquals(a.context.port(1).gids().indexOf(ia.gid()), q.sourceGidIndex());
        assertEquals(32, q.trafficClass());
        if (keepsServiceLevelAndHopLimit()) {
            assertEquals(3, q.serviceLevel());
            assertEquals(17, q.hopLimit());
        }
        assertAWriteLands();
    }

    /** Options the device cannot do are refused naming the value and the limit, before the QP leaves RESET. */
    @Test
    void optionsTheDeviceCannotDoAreRefusedAndLeaveTheQpInReset() {
        a.qp.reset();
        b.qp.reset();
        DeviceAttributes device = a.context.device().attributes();
        PortAttributes port = a.context.port(1);
        QpInfo peer = b.qp.info(FAST);
        assertRefused(FAST.toBuilder().maxRdAtomic(device.maxQpInitRdAtom() + 1).build(), peer,
                "maxRdAtomic " + (device.maxQpInitRdAtom() + 1), "max_qp_init_rd_atom of " + device.maxQpInitRdAtom());
        assertRefused(FAST.toBuilder().maxDestRdAtomic(device.maxQpRdAtom() + 1).build(), peer,
                "maxDestRdAtomic " + (device.maxQpRdAtom() + 1), "max_qp_rd_atom of " + device.maxQpRdAtom());
        assertRefused(FAST.toBuilder().pkeyIndex(port.pkeyTableLength()).build(), peer,
                "pkeyIndex " + port.pkeyTableLength(), port.pkeyTableLength() + "-entry P_Key table");
        assertRefused(FAST.toBuilder().gidIndex(port.gids().size()).build(), peer,
                "GID index " + port.gids().size(), port.gids().size() + "-entry GID table");
        connect(FAST); // nothing was left half-done
        assertAWriteLands();
    }

    /** A WRITE from a to b arrives intact: the connection works. */
    private void assertAWriteLands() {
        MemoryRegion src = a.open(8, 0x5c);
        MemoryRegion dst = b.open(8, 0);
        a.qp.post(WorkRequest.write(src, 0, 8).remote(dst.address(), dst.rkey()));
        a.expect(WcStatus.SUCCESS);
        assertEquals(-1, src.segment().mismatch(dst.segment()));
    }

    private void assertRefused(ConnectOptions options, QpInfo peer, String value, String limit) {
        var e = assertThrows(IllegalArgumentException.class, () -> a.qp.connect(peer, options));
        assertTrue(e.getMessage().contains(value) && e.getMessage().contains(limit), e::getMessage);
        assertEquals(QpState.RESET, a.qp.state(), "a refused connect leaves the QP in RESET");
    }

    // ---- bad input -------------------------------------------------------------------------------------------

    @Test
    void badRegistrationsAreRefusedClearly() {
        var heap = assertThrows(IllegalArgumentException.class,
                () -> a.pd.register(MemorySegment.ofArray(new byte[64]), EnumSet.of(Access.LOCAL_WRITE)));
        assertTrue(heap.getMessage().contains("heap segment"), heap.getMessage());
        var empty = assertThrows(IllegalArgumentException.class,
                () -> a.pd.register(arena.allocate(0), EnumSet.of(Access.LOCAL_WRITE)));
        assertTrue(empty.getMessage().contains("0 bytes"), empty.getMessage());
        var rights = assertThrows(IllegalArgumentException.class,
                () -> a.pd.register(arena.allocate(64), EnumSet.of(Access.REMOTE_WRITE)));
        assertTrue(rights.getMessage().contains("LOCAL_WRITE"), rights.getMessage());
        MemoryRegion mr = a.open(64, 0);
        var range = assertThrows(IllegalArgumentException.class, () -> WorkRequest.write(mr, 60, 8));
        assertTrue(range.getMessage().contains("outside"), range.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> a.pd.createQueuePair(a.cq, b.cq, QpCapabilities.DEFAULT), "CQ of another device context");
        assertThrows(IllegalArgumentException.class,
                () -> a.pd.createQueuePair(a.cq, a.cq, QpCapabilities.builder().maxSendWr(1 << 30).build()));
        assertThrows(IllegalArgumentException.class, () -> a.context.createCompletionQueue(0));
        assertEquals(Set.of(), Set.copyOf(graph.failures()));
    }

    /**
     * Memory whose arena is closed is freed: registered, a NIC would reach whatever is allocated there next. It was
     * registered (the soft NIC then failed every access; a real one writes into the freed memory).
     */
    @Test
    void memoryOfAClosedArenaIsRefusedWhenRegistered() {
        Arena closed = Arena.ofConfined();
        MemorySegment freed = closed.allocate(64, 64);
        closed.close();
        var e = assertThrows(IllegalStateException.class, () -> a.pd.register(freed, EnumSet.of(Access.REMOTE_READ)));
        assertTrue(e.getMessage().contains("arena is closed"), e.getMessage());
        assertEquals(Set.of(), Set.copyOf(graph.failures()));
        assertEquals(ResourceState.OPEN, a.pd.resource().state());
    }

    /**
     * A read-only segment cannot take the writes LOCAL_WRITE (and so remote write and atomic rights) lets the NIC make:
     * ibv_reg_mr fails with EFAULT on read-only memory. It was registered, and the soft NIC's write into a read-only
     * mapped file then crashed the JVM (SIGSEGV). Registered for reading, it serves READs.
     */
    @Test
    void aReadOnlySegmentIsRegisteredForReadingOnly() {
        MemorySegment memory = arena.allocate(64, 64);
        memory.fill((byte) 0x3c);
        MemorySegment readOnly = memory.asReadOnly();
        var e = assertThrows(IllegalArgumentException.class,
                () -> b.pd.register(readOnly, EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE)));
        assertTrue(e.getMessage().contains("read-only"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> b.pd.register(readOnly, EnumSet.of(Access.LOCAL_WRITE)));

        MemoryRegion readable = b.pd.register(readOnly, EnumSet.of(Access.REMOTE_READ));
        MemoryRegion into = a.open(64, 0);
        a.qp.post(WorkRequest.read(into, 0, 64).remote(readable.address(), readable.rkey()));
        a.expect(WcStatus.SUCCESS);
        assertEquals(-1, into.segment().mismatch(memory));
    }

    static void assertUnchanged(MemoryRegion mr, int fill) {
        byte[] expected = new byte[(int) mr.length()];
        java.util.Arrays.fill(expected, (byte) fill);
        assertArrayEquals(expected, mr.segment().toArray(ValueLayout.JAVA_BYTE), "a rejected access changed memory");
    }
}
