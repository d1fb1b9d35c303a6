package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.lifecycle.ResourceState;
import io.mooring.verbs.ibv.IbvProvider;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.MwType;
import io.mooring.verbs.values.Opcode;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.QpState;
import io.mooring.verbs.values.WcOpcode;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * What only real verbs can show (run in the rxe VM by scripts/rxe-test.sh; skipped, with the reason, without
 * an ibv device): a long WRITE/READ soak that leaks neither verbs objects nor native memory, type 2 windows
 * bound and invalidated across QP recovery, error flushes, and destroying a full object set in every order.
 */
@Timeout(value = 15, unit = java.util.concurrent.TimeUnit.MINUTES)
class IbvRxeTest {
    /** WRITE/READ round trips of the soak; {@code -Dmooring.soak.iterations} overrides. */
    static final int SOAK = Integer.getInteger("mooring.soak.iterations", 100_000);
    static final ConnectOptions FAST = VerbsConformance.FAST;

    private static String device;
    private ResourceGraph graph;
    private Arena arena;

    @BeforeAll
    static void requireDevice() {
        device = IbvDevice.require();
    }

    @BeforeEach
    void open(TestInfo test) {
        System.out.println("rxe: " + test.getDisplayName() + " starts");
        graph = ResourceGraph.builder().name("rxe").build();
        arena = Arena.ofShared();
    }

    @AfterEach
    void close() {
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
        assertEquals(List.of(), graph.failures());
        arena.close();
    }

    private Endpoint endpoint() {
        return new Endpoint(RdmaDevices.open("ibv:" + device, graph), arena, QpCapabilities.DEFAULT);
    }

    private static void connect(Endpoint a, Endpoint b) {
        QpInfo ia = a.qp.info(FAST);
        QpInfo ib = b.qp.info(FAST);
        a.qp.connect(ib, FAST);
        b.qp.connect(ia, FAST);
    }

    // ---- soak ------------------------------------------------------------------------------------------------

    @Test
    void writeReadSoakLeaksNothing() throws IOException {
        Endpoint a = endpoint();
        Endpoint b = endpoint();
        connect(a, b);
        MemoryRegion src = a.open(64, 0);
        MemoryRegion back = a.open(64, 0);
        MemoryRegion dst = b.open(64, 0);
        WorkRequest write = new WorkRequest();
        WorkRequest read = new WorkRequest();
        WorkCompletion[] wcs = {new WorkCompletion(), new WorkCompletion()};

        Consumer<Integer> rounds = n -> {
            for (int i = 0; i < n; i++) {
                src.segment().set(ValueLayout.JAVA_LONG, 0, i);
                a.qp.post(write.reset().opcode(Opcode.RDMA_WRITE).local(src, 0, 64)
                        .remote(dst.address(), dst.rkey()).signaled(false));
                a.qp.post(read.reset().opcode(Opcode.RDMA_READ).local(back, 0, 64)
                        .remote(dst.address(), dst.rkey()).wrId(i));
                int got;
                long spins = 0;
                while ((got = a.cq.poll(wcs)) == 0) {
                    if (++spins % 1024 == 0) Thread.onSpinWait();
                }
                assertEquals(1, got);
                if (i > 0 && i % 20_000 == 0) System.out.println("rxe soak: " + i + " round trips");
                if (!wcs[0].isSuccess() || wcs[0].wrId() != i || back.segment().get(ValueLayout.JAVA_LONG, 0) != i) {
                    throw new AssertionError("round " + i + ": " + wcs[0] + ", read back "
                            + back.segment().get(ValueLayout.JAVA_LONG, 0));
                }
            }
        };
        rounds.accept(Math.min(2_000, SOAK)); // warm-up: JIT, first-touch pages
        System.gc();
        long rss = rssKiB();
        long fds = openFds();
        long nativeBytes = IbvProvider.nativeBytesInUse();
        int live = graph.liveCount();

        long t0 = System.nanoTime();
        rounds.accept(SOAK);
        long micros = (System.nanoTime() - t0) / 1_000 / Math.max(1, SOAK);

        System.gc();
        long grown = rssKiB() - rss;
        System.out.printf("rxe soak: %d WRITE+READ round trips, %d us each; live objects %d -> %d; provider native"
                + " bytes %d -> %d; fds %d -> %d; VmRSS %+d KiB%n", SOAK, micros, live, graph.liveCount(),
                nativeBytes, IbvProvider.nativeBytesInUse(), fds, openFds(), grown);
        assertEquals(live, graph.liveCount(), graph::dump);
        assertEquals(nativeBytes, IbvProvider.nativeBytesInUse());
        assertEquals(fds, openFds());
        assertEquals(0, a.qp.outstandingSends());
        assertTrue(grown < 64 * 1024, "VmRSS grew by " + grown + " KiB over the soak");
    }

    @Test
    void creatingAndDestroyingObjectsLeaksNothing() throws IOException {
        Endpoint a = endpoint();
        for (int round = 0; round < 3; round++) { // warm up
            cycle(a);
        }
        long fds = openFds();
        long nativeBytes = IbvProvider.nativeBytesInUse();
        int live = graph.liveCount();
        for (int round = 0; round < 50; round++) cycle(a);
        assertEquals(live, graph.liveCount(), graph::dump);
        assertEquals(nativeBytes, IbvProvider.nativeBytesInUse());
        assertEquals(fds, openFds());
        graph.close();
        assertEquals(0, graph.liveCount());
        assertEquals(0, IbvProvider.nativeBytesInUse(), "every context closed: the provider holds no native memory");
    }

    /** A PD, CQ, QP (connected to itself), MR and bound MW, used once and closed as a tree. */
    private void cycle(Endpoint a) {
        ProtectionDomain pd = a.context.allocateProtectionDomain();
        CompletionQueue cq = a.context.createCompletionQueue(64);
        QueuePair qp = pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
        qp.connect(qp.info(FAST), FAST);
        MemoryRegion mr = pd.register(arena.allocate(4096, 64), EnumSet.allOf(Access.class));
        MemoryWindow mw = pd.allocateWindow(MwType.TYPE_2);
        qp.post(WorkRequest.bind(mw, mr, 0, 64, EnumSet.of(Access.REMOTE_WRITE)));
        WorkCompletion[] one = {new WorkCompletion()};
        try {
            while (cq.poll(one, java.time.Duration.ofSeconds(5)) == 0) { }
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
        assertTrue(one[0].isSuccess(), one[0]::toString);
        pd.resource().closeTree();
        cq.close();
        assertEquals(ResourceState.DESTROYED, cq.resource().state());
    }

    // ---- memory windows -------------------------------------------------------------------------------------

    @Test
    void type2WindowsAreRevokedAndRebindAcrossQpRecovery() {
        Endpoint a = endpoint();
        Endpoint b = endpoint();
        connect(a, b);
        MemoryRegion region = b.open(4096, 0);
        MemoryRegion src = a.open(256, 0x5c);
        MemoryWindow window = b.pd.allocateWindow(MwType.TYPE_2);
        List<Integer> keys = new ArrayList<>();
        for (int exposure = 0; exposure < 5; exposure++) {
            long offset = 256L * exposure;
            b.qp.post(WorkRequest.bind(window, region, offset, 256, EnumSet.of(Access.REMOTE_WRITE)));
            assertEquals(WcOpcode.BIND_MW, b.expect(WcStatus.SUCCESS).opcode());
            int key = window.rkey();
            assertFalse(keys.contains(key), "every bind carries a fresh key");
            keys.add(key);

            a.qp.post(WorkRequest.write(src, 0, 256).remote(region.address() + offset, key));
            a.expect(WcStatus.SUCCESS);
            assertEquals(-1, region.segment().asSlice(offset, 256).mismatch(src.segment()));

            b.qp.post(WorkRequest.invalidate(key));
            assertEquals(WcOpcode.LOCAL_INV, b.expect(WcStatus.SUCCESS).opcode());
            assertFalse(window.isBound());
            region.segment().asSlice(offset, 256).fill((byte) 0);

            // the late write of the ended exposure, and of every earlier one
            for (int old : keys) {
                a.qp.post(WorkRequest.write(src, 0, 256).remote(region.address() + offset, old));
                a.expect(WcStatus.REM_ACCESS_ERR);
                assertEquals(QpState.ERROR, a.qp.state());
                assertEquals(QpState.ERROR, b.qp.state(), "rxe moves the responder to ERROR too");
                b.expectNothing();
                a.qp.reset();
                b.qp.reset();
                connect(a, b);
            }
            VerbsConformance.assertUnchanged(region, 0);
        }
        region.close();
        assertEquals(ResourceState.DESTROYED, region.resource().state(), "no window holds it any more");
    }

    // ---- error flush ------------------------------------------------------------------------------------------

    @Test
    void anErrorFlushesEverythingQueuedInOrder() {
        Endpoint a = endpoint();
        Endpoint b = endpoint();
        connect(a, b);
        MemoryRegion src = a.open(64, 0x11);
        MemoryRegion dst = b.open(64, 0x22);
        MemoryRegion in = b.open(64 * 8, 0);
        for (int i = 0; i < 8; i++) b.qp.post(ReceiveRequest.into(in, 64L * i, 64).wrId(100 + i));

        a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey() ^ 0x80).wrId(1));
        for (int i = 2; i <= 10; i++) {
            a.qp.post(WorkRequest.write(src, 0, 64).remote(dst.address(), dst.rkey()).wrId(i).signaled(i % 2 == 0));
        }
        assertEquals(1, a.expect(WcStatus.REM_ACCESS_ERR).wrId());
        for (int i = 2; i <= 10; i++) assertEquals(i, a.expect(WcStatus.WR_FLUSH_ERR).wrId());
        a.expectNothing();
        assertEquals(0, a.qp.outstandingSends());
        VerbsConformance.assertUnchanged(dst, 0x22);

        // the responder went to ERROR as well: its receives flush, in order
        for (int i = 0; i < 8; i++) {
            WorkCompletion wc = b.expect(WcStatus.WR_FLUSH_ERR);
            assertEquals(100 + i, wc.wrId());
            assertEquals(WcOpcode.RECV, wc.opcode());
        }
        assertEquals(0, b.qp.outstandingReceives());
        in.close();
        assertEquals(ResourceState.DESTROYED, in.resource().state(), "flushed receives released their region");
    }

    // ---- teardown in every order -----------------------------------------------------------------------------

    /**
     * Every order of closing the five children of a context (PD, CQ, MR, bound MW, QP with a receive
     * outstanding) on one shared context, then the context closed at each of the six positions among them
     * with a fresh context each: whatever the order, the graph destroys them children first and nothing fails
     * (no EBUSY reaches anyone).
     */
    @Test
    void destroyingAFullObjectSetInEveryOrderNeverFails() {
        Endpoint peer = endpoint();
        String[] kinds = {"context", "pd", "cq", "mr", "mw", "qp"};
        List<int[]> orders = new ArrayList<>();
        permutations(new int[5], new boolean[5], 0, orders);
        assertEquals(120, orders.size());
        long t0 = System.nanoTime();
        DeviceContext shared = RdmaDevices.open("ibv:" + device, graph);
        for (int n = 0; n < orders.size(); n++) {
            if (n % 20 == 0) System.out.printf("rxe teardown: %d orders in %d ms%n", n, (System.nanoTime() - t0) / 1_000_000);
            int[] children = orders.get(n);
            int[] order = new int[5];
            for (int k = 0; k < 5; k++) order[k] = children[k] + 1;
            closeInOrder(fullSet(shared, peer), order, kinds);
        }
        for (int contextAt = 0; contextAt < 6; contextAt++) {
            int[] children = orders.get(contextAt * 23 % orders.size());
            int[] order = new int[6];
            for (int k = 0, c = 0; k < 6; k++) order[k] = k == contextAt ? 0 : children[c++] + 1;
            DeviceContext ctx = RdmaDevices.open("ibv:" + device, graph);
            closeInOrder(fullSet(ctx, peer), order, kinds);
            assertEquals(ResourceState.DESTROYED, ctx.resource().state(), () -> "order " + describe(order, kinds));
        }
        System.out.printf("rxe teardown: 126 orders in %d ms%n", (System.nanoTime() - t0) / 1_000_000);
        shared.close();
        peer.context.resource().closeTree();
        assertEquals(0, graph.liveCount(), graph::dump);
    }

    private void closeInOrder(AutoCloseable[] objects, int[] order, String[] kinds) {
        for (int k : order) {
            try {
                objects[k].close();
            } catch (Exception e) {
                throw new AssertionError("closing " + kinds[k] + " in order " + describe(order, kinds), e);
            }
        }
        assertEquals(List.of(), graph.failures(), () -> "order " + describe(order, kinds));
        for (int k : order) {
            if (k > 0) {
                var r = switch (objects[k]) {
                    case ProtectionDomain pd -> pd.resource();
                    case CompletionQueue cq -> cq.resource();
                    case MemoryRegion mr -> mr.resource();
                    case MemoryWindow mw -> mw.resource();
                    case QueuePair qp -> qp.resource();
                    default -> throw new AssertionError(objects[k]);
                };
                assertEquals(ResourceState.DESTROYED, r.state(), () -> kinds[k] + " in order " + describe(order, kinds));
            }
        }
    }

    /**
     * A context's PD, CQ, a QP connected to {@code peer} with a receive outstanding, an MR and a type 2 window
     * bound to it: index order context, pd, cq, mr, mw, qp.
     */
    private AutoCloseable[] fullSet(DeviceContext ctx, Endpoint peer) {
        ProtectionDomain pd = ctx.allocateProtectionDomain();
        CompletionQueue cq = ctx.createCompletionQueue(64);
        QueuePair qp = pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
        qp.connect(peer.qp.info(FAST), FAST);
        MemoryRegion mr = pd.register(arena.allocate(256, 64), EnumSet.allOf(Access.class));
        MemoryWindow mw = pd.allocateWindow(MwType.TYPE_2);
        qp.post(WorkRequest.bind(mw, mr, 0, 128, EnumSet.of(Access.REMOTE_READ)));
        WorkCompletion[] one = {new WorkCompletion()};
        try {
            assertEquals(1, cq.poll(one, java.time.Duration.ofSeconds(10)));
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
        assertTrue(one[0].isSuccess(), one[0]::toString);
        qp.post(ReceiveRequest.into(mr, 128, 128)); // outstanding: holds the MR until flushed or destroyed
        return new AutoCloseable[] {ctx, pd, cq, mr, mw, qp};
    }

    private static void permutations(int[] current, boolean[] used, int depth, List<int[]> out) {
        if (depth == current.length) {
            out.add(current.clone());
            return;
        }
        for (int i = 0; i < current.length; i++) {
            if (used[i]) continue;
            used[i] = true;
            current[depth] = i;
            permutations(current, used, depth + 1, out);
            used[i] = false;
        }
    }

    private static String describe(int[] order, String[] kinds) {
        StringBuilder s = new StringBuilder();
        for (int k : order) s.append(s.isEmpty() ? "" : " -> ").append(kinds[k]);
        return s.toString();
    }

    // ---- helpers ----------------------------------------------------------------------------------------------

    private static long openFds() throws IOException {
        try (var s = Files.list(Path.of("/proc/self/fd"))) {
            return s.count();
        }
    }

    private static long rssKiB() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) return Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
        return -1;
    }
}
