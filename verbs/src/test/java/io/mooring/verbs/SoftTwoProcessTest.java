package io.mooring.verbs;

import static io.mooring.verbs.TwoProcessPeer.INBOX;
import static io.mooring.verbs.TwoProcessPeer.OPEN;
import static io.mooring.verbs.TwoProcessPeer.READ_ONLY;
import static io.mooring.verbs.TwoProcessPeer.WINDOWED;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ResourceGraph;
import io.mooring.testing.ChildJvm;
import io.mooring.verbs.TwoProcessPeer.Command;
import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.QpState;
import io.mooring.verbs.values.WcOpcode;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The verbs across two processes: this JVM's {@code soft0} against the {@code soft0} of a {@link TwoProcessPeer}
 * in a child JVM, so every operation crosses the TCP fabric between processes. The child's regions, window and
 * completions are reached through its control connection (which also carries the bootstrap): the parent checks
 * the child's memory from a dump of it, byte for byte. Every case starts from freshly reset and reconnected QPs;
 * the last one ends the child and expects a clean exit. One more child is killed mid-session.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(60)
final class SoftTwoProcessTest {
    /**
     * ACK timeout ≈ 0.27 s, 7 retries: a fabric connection still coming up on a loaded host gets seconds, and a
     * vanished peer is reported within seconds too.
     */
    private static final ConnectOptions OPTIONS = ConnectOptions.builder().ackTimeout(Duration.ofMillis(250)).build();

    private ResourceGraph graph;
    private Arena arena;
    private Endpoint me;
    private Child child;
    private Remote[] regions;

    /** A region of the child as its application record describes it. */
    record Remote(long address, int rkey, long length) {
        static Remote[] readAll(ByteBuffer record) {
            Remote[] all = new Remote[TwoProcessPeer.SIZES.length];
            for (int i = 0; i < all.length; i++) {
                all[i] = new Remote(record.getLong(), record.getInt(), record.getLong());
            }
            return all;
        }
    }

    /** A completion as the child reports it. */
    record Reported(WcStatus status, WcOpcode opcode, long wrId, int byteLength, OptionalInt immediate) {}

    @BeforeAll
    void startChild(@TempDir Path dir) throws Exception {
        graph = ResourceGraph.builder().name(getClass().getSimpleName()).build();
        arena = Arena.ofShared();
        me = new Endpoint(RdmaDevices.open("soft:soft0", graph), arena, QpCapabilities.DEFAULT);
        child = Child.start(dir.resolve("peer.err"));
    }

    @AfterAll
    void stopChild() {
        try {
            if (child != null) child.close(); // null if it could not be started
        } finally {
            graph.close();
            arena.close();
        }
    }

    /** Both QPs reset and meet again through the bootstrap, so that no case inherits another's errors. */
    @BeforeEach
    void reconnect() {
        regions = child.connect(me.qp, OPTIONS);
    }

    /** Neither side saw a completion its case did not account for. */
    @AfterEach
    void nothingLeftOver() {
        if (!child.process.isAlive()) return; // the last case ended it
        assertEquals(List.of(), child.completions(0), "completions the child saw");
        me.expectNothing();
    }

    @Test
    @Order(1) // it has a child of its own: first, so that a broken session cannot take it down too
    void aKilledPeerFailsTheNextRequestWithRetryExceeded(@TempDir Path dir) throws Exception {
        Endpoint side = new Endpoint(me.context, arena, QpCapabilities.DEFAULT);
        try (Child doomed = Child.start(dir.resolve("doomed.err"))) {
            Remote open = doomed.connect(side.qp, OPTIONS)[OPEN];
            MemoryRegion src = side.open(64, 0x31);
            side.qp.post(WorkRequest.write(src, 0, 64).remote(open.address(), open.rkey()).wrId(1));
            assertEquals(1, side.expect(WcStatus.SUCCESS).wrId(), "connected before the kill");

            doomed.process.destroyForcibly();
            assertTrue(doomed.process.waitFor(30, TimeUnit.SECONDS), "the child did not die");
            side.qp.post(WorkRequest.write(src, 0, 64).remote(open.address(), open.rkey()).wrId(2));
            side.qp.post(WorkRequest.write(src, 0, 64).remote(open.address(), open.rkey()).wrId(3));
            WorkCompletion wc = side.expect(WcStatus.RETRY_EXC_ERR); // within Endpoint.WAIT, or it fails: no hang
            assertEquals(2, wc.wrId());
            assertEquals(3, side.expect(WcStatus.WR_FLUSH_ERR).wrId());
            assertEquals(QpState.ERROR, side.qp.state());
        } finally {
            side.pd.resource().closeTree();
            side.cq.close();
        }
    }

    @Test
    @Order(2)
    void writeThenReadBack() {
        MemoryRegion known = local(size(READ_ONLY), 0);
        me.qp.post(WorkRequest.read(known, 0, (int) known.length()).remote(remote(READ_ONLY).address(),
                remote(READ_ONLY).rkey()).wrId(1));
        WorkCompletion read = me.expect(WcStatus.SUCCESS);
        assertEquals(WcOpcode.RDMA_READ, read.opcode());
        assertEquals(known.length(), read.byteLength());
        assertArrayEquals(filled(READ_ONLY), bytes(known), "the child's region as it filled it");

        MemoryRegion src = local(size(OPEN), 0);
        for (int i = 0; i < src.length(); i++) src.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13 + 5));
        me.qp.post(WorkRequest.write(src, 0, (int) src.length()).remote(remote(OPEN).address(), remote(OPEN).rkey())
                .wrId(2));
        WorkCompletion write = me.expect(WcStatus.SUCCESS);
        assertEquals(2, write.wrId());
        assertEquals(WcOpcode.RDMA_WRITE, write.opcode());
        assertArrayEquals(bytes(src), child.dump(OPEN), "the child's memory after the write");

        MemoryRegion back = local(size(OPEN), 0);
        me.qp.post(WorkRequest.read(back, 0, (int) back.length()).remote(remote(OPEN).address(), remote(OPEN).rkey())
                .wrId(3));
        assertEquals(3, me.expect(WcStatus.SUCCESS).wrId());
        assertArrayEquals(bytes(src), bytes(back), "read back");
    }

    @Test
    @Order(3)
    void sendWithImmediateLandsInTheChildsReceives() {
        assertEquals(2, child.receive(2, 256));
        MemoryRegion out = local(256, 0);
        for (int i = 0; i < 256; i++) out.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (0xA0 ^ i));
        me.qp.post(WorkRequest.send(out, 0, 100).wrId(1));
        me.qp.post(WorkRequest.send(out, 0, 200).immediate(0xC0FFEE).wrId(2));
        for (int id = 1; id <= 2; id++) {
            WorkCompletion wc = me.expect(WcStatus.SUCCESS);
            assertEquals(id, wc.wrId());
            assertEquals(WcOpcode.SEND, wc.opcode());
        }
        long first = TwoProcessPeer.FIRST_RECEIVE_ID;
        assertEquals(List.of(new Reported(WcStatus.SUCCESS, WcOpcode.RECV, first, 100, OptionalInt.empty()),
                new Reported(WcStatus.SUCCESS, WcOpcode.RECV, first + 1, 200, OptionalInt.of(0xC0FFEE))),
                child.completions(2));
        byte[] expected = filled(INBOX);
        System.arraycopy(bytes(out), 0, expected, 0, 100);
        System.arraycopy(bytes(out), 0, expected, 256, 200);
        assertArrayEquals(expected, child.dump(INBOX), "each message in its receive, nothing past it");
    }

    @Test
    @Order(4)
    void atomicsReturnTheOriginalValue() {
        long at = remote(OPEN).address() + 2048;
        int rkey = remote(OPEN).rkey();
        long start = longAt(child.dump(OPEN), 2048);
        MemoryRegion result = local(16, 0);

        me.qp.post(WorkRequest.fetchAndAdd(result, 0, at, rkey, 5));
        assertEquals(WcOpcode.FETCH_ADD, me.expect(WcStatus.SUCCESS).opcode());
        assertEquals(start, result.segment().get(ValueLayout.JAVA_LONG, 0));
        assertEquals(start + 5, longAt(child.dump(OPEN), 2048));

        me.qp.post(WorkRequest.compareAndSwap(result, 8, at, rkey, start, 99));
        assertEquals(WcOpcode.COMP_SWAP, me.expect(WcStatus.SUCCESS).opcode());
        assertEquals(start + 5, result.segment().get(ValueLayout.JAVA_LONG, 8), "a failed compare returns the value");
        assertEquals(start + 5, longAt(child.dump(OPEN), 2048), "and swaps nothing");

        me.qp.post(WorkRequest.compareAndSwap(result, 8, at, rkey, start + 5, 0x1122_3344_5566_7788L));
        me.expect(WcStatus.SUCCESS);
        assertEquals(start + 5, result.segment().get(ValueLayout.JAVA_LONG, 8));
        assertEquals(0x1122_3344_5566_7788L, longAt(child.dump(OPEN), 2048));
    }

    @Test
    @Order(5)
    void aType2WindowAdmitsWritesUntilTheChildInvalidatesIt() {
        byte[] before = child.dump(WINDOWED);
        int key = child.bind(1024, 512);
        assertNotEquals(remote(WINDOWED).rkey(), key, "the window has its own key");
        MemoryRegion src = local(512, 0x5A);
        long inside = remote(WINDOWED).address() + 1024;
        me.qp.post(WorkRequest.write(src, 0, 512).remote(inside, key).wrId(1));
        assertEquals(1, me.expect(WcStatus.SUCCESS).wrId());
        Arrays.fill(before, 1024, 1536, (byte) 0x5A);
        byte[] written = child.dump(WINDOWED);
        assertArrayEquals(before, written, "exactly the window's range written");

        assertEquals(WcStatus.SUCCESS, child.invalidate());
        src.segment().fill((byte) 0xA5);
        me.qp.post(WorkRequest.write(src, 0, 512).remote(inside, key).wrId(2));
        WorkCompletion late = me.expect(WcStatus.REM_ACCESS_ERR);
        assertEquals(2, late.wrId());
        assertEquals(WcOpcode.RDMA_WRITE, late.opcode());
        assertArrayEquals(written, child.dump(WINDOWED), "the late write of an ended exposure changed memory");
    }

    /** Accesses the child's responder must refuse. */
    enum Violation {
        WRONG_RKEY, OUT_OF_RANGE, NO_REMOTE_WRITE
    }

    @ParameterizedTest
    @EnumSource(Violation.class)
    @Order(6)
    void accessViolationsFailWithoutTouchingTheChildsMemory(Violation violation) {
        int region = violation == Violation.NO_REMOTE_WRITE ? READ_ONLY : OPEN;
        Remote target = remote(region);
        byte[] before = child.dump(region);
        MemoryRegion src = local(64, 0xEE);
        WorkRequest write = switch (violation) {
            case WRONG_RKEY -> WorkRequest.write(src, 0, 64).remote(target.address(), target.rkey() ^ 0x80);
            case OUT_OF_RANGE -> WorkRequest.write(src, 0, 64).remote(target.address() + target.length() - 32,
                    target.rkey());
            case NO_REMOTE_WRITE -> WorkRequest.write(src, 0, 64).remote(target.address(), target.rkey());
        };
        me.qp.post(write.wrId(9));
        WorkCompletion wc = me.expect(WcStatus.REM_ACCESS_ERR);
        assertEquals(9, wc.wrId());
        assertEquals(WcOpcode.RDMA_WRITE, wc.opcode());
        assertArrayEquals(before, child.dump(region), "a rejected access changed the child's memory");
        assertEquals(QpState.ERROR, me.qp.state());
        assertEquals(QpState.ERROR, child.state(), "the responder moves to ERROR too");
    }

    @Test
    @Order(7)
    void aSendWithoutAReceiveFailsWithRnrOnceItsRetriesRunOut() {
        regions = child.connect(me.qp, OPTIONS.toBuilder().rnrRetry(1).build());
        byte[] before = child.dump(INBOX);
        MemoryRegion out = local(16, 0x77);
        me.qp.post(WorkRequest.send(out, 0, 16).wrId(4));
        WorkCompletion wc = me.expect(WcStatus.RNR_RETRY_EXC_ERR);
        assertEquals(4, wc.wrId());
        assertEquals(WcOpcode.SEND, wc.opcode());
        assertEquals(QpState.ERROR, me.qp.state());
        assertArrayEquals(before, child.dump(INBOX));
    }

    @Test
    @Order(8)
    void anErrorFlushesWhatIsQueuedOnBothSides() {
        assertEquals(2, child.receive(2, 64));
        byte[] before = child.dump(OPEN);
        Remote open = remote(OPEN);
        MemoryRegion src = local(64, 0xAB);
        me.qp.post(WorkRequest.write(src, 0, 64).remote(open.address(), open.rkey() ^ 0x80).wrId(1));
        // Valid requests behind the failing one: flushed, never executed.
        me.qp.post(WorkRequest.write(src, 0, 64).remote(open.address(), open.rkey()).wrId(2).signaled(false));
        me.qp.post(WorkRequest.write(src, 0, 64).remote(open.address() + 64, open.rkey()).wrId(3));
        assertEquals(1, me.expect(WcStatus.REM_ACCESS_ERR).wrId());
        assertEquals(2, me.expect(WcStatus.WR_FLUSH_ERR).wrId(), "unsignaled requests report their flush too");
        assertEquals(3, me.expect(WcStatus.WR_FLUSH_ERR).wrId());
        me.qp.post(WorkRequest.write(src, 0, 64).remote(open.address(), open.rkey()).wrId(4));
        assertEquals(4, me.expect(WcStatus.WR_FLUSH_ERR).wrId(), "posted in ERROR");
        assertArrayEquals(before, child.dump(OPEN), "a flushed request changed the child's memory");

        assertEquals(QpState.ERROR, child.state());
        long first = TwoProcessPeer.FIRST_RECEIVE_ID;
        assertEquals(List.of(new Reported(WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, first, 0, OptionalInt.empty()),
                new Reported(WcStatus.WR_FLUSH_ERR, WcOpcode.RECV, first + 1, 0, OptionalInt.empty())),
                child.completions(2), "the child's receives flushed in order");
    }

    @Test
    @Order(9)
    void theChildClosesEverythingAndExitsCleanly() throws Exception {
        assertEquals(0, child.exit(), "verbs objects the child left alive");
        assertTrue(child.process.waitFor(30, TimeUnit.SECONDS), "the child did not exit");
        assertEquals(0, child.process.exitValue(), child::stderr);
        assertEquals("", child.stderr());
        assertNull(child.stdout.readLine(), "the child prints its port and nothing else");
    }

    // ---- helpers ---------------------------------------------------------------------------------------------

    private Remote remote(int region) {
        return regions[region];
    }

    private static long size(int region) {
        return TwoProcessPeer.SIZES[region];
    }

    private MemoryRegion local(long size, int fill) {
        return me.open(size, fill);
    }

    private static byte[] bytes(MemoryRegion mr) {
        return mr.segment().toArray(ValueLayout.JAVA_BYTE);
    }

    /** A region's bytes as the child filled them. */
    private static byte[] filled(int region) {
        byte[] b = new byte[(int) size(region)];
        for (int i = 0; i < b.length; i++) b[i] = TwoProcessPeer.pattern(region, i);
        return b;
    }

    /** The 8 bytes at {@code offset} as the child's CPU sees them (same host: same byte order). */
    private static long longAt(byte[] dump, int offset) {
        return MemorySegment.ofArray(dump).get(ValueLayout.JAVA_LONG_UNALIGNED, offset);
    }

    /**
     * A {@link TwoProcessPeer} in its own JVM with this test's classpath, and the control connection to it. Every
     * read on that connection is bounded; an I/O failure fails the test with the child's stderr.
     */
    private static final class Child implements AutoCloseable {
        private static final int STARTUP_SECONDS = 30;
        private static final int REPLY_MILLIS = 30_000;

        final Process process;
        final BufferedReader stdout;
        private final Path stderrFile;
        private final Socket control;
        private final DataInputStream in;
        private final DataOutputStream out;
        private final Bootstrap bootstrap;

        private Child(Process process, BufferedReader stdout, Path stderrFile, Socket control) throws IOException {
            this.process = process;
            this.stdout = stdout;
            this.stderrFile = stderrFile;
            this.control = control;
            in = new DataInputStream(control.getInputStream()); // unbuffered: the bootstrap reads it too
            out = new DataOutputStream(new BufferedOutputStream(control.getOutputStream()));
            bootstrap = Bootstrap.of(control);
        }

        static Child start(Path stderrFile) throws Exception {
            // C1 only and one GC thread: the child starts faster and competes less on a small, busy machine.
            Process process = new ProcessBuilder(ChildJvm.command(List.of("--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
                    "-XX:+UseSerialGC"), TwoProcessPeer.class)).redirectError(stderrFile.toFile()).start();
            boolean started = false;
            try {
                var stdout = new BufferedReader(
                        new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
                String first = CompletableFuture.supplyAsync(() -> {
                    try {
                        return stdout.readLine();
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }).get(STARTUP_SECONDS, TimeUnit.SECONDS);
                if (first == null || !first.matches("\\d+")) {
                    throw new AssertionError("the child printed " + first + " instead of its port; stderr: "
                            + read(stderrFile));
                }
                var control = new Socket();
                control.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), Integer.parseInt(first)),
                        REPLY_MILLIS);
                control.setSoTimeout(REPLY_MILLIS);
                control.setTcpNoDelay(true);
                Child child = new Child(process, stdout, stderrFile, control);
                started = true;
                return child;
            } finally {
                if (!started) process.destroyForcibly();
            }
        }

        /** Resets {@code qp}, has the child reset its QP, and connects both; returns the child's regions. */
        Remote[] connect(QueuePair qp, ConnectOptions options) {
            try {
                if (qp.state() != QpState.RESET) qp.reset();
                command(Command.CONNECT);
                Bootstrap.Peer peer = bootstrap.exchange(qp.info(options), ByteBuffer.allocate(0),
                        TwoProcessPeer.RECORD_BYTES);
                qp.connect(peer.qp(), options);
                bootstrap.barrier(); // both QPs are ready before the first request
                return Remote.readAll(peer.data());
            } catch (IOException e) {
                throw broken(e);
            }
        }

        int receive(int count, int length) {
            try {
                command(Command.RECEIVE, count, length);
                return in.readInt();
            } catch (IOException e) {
                throw broken(e);
            }
        }

        /** The window's new rkey; the bind must succeed. */
        int bind(int offset, int length) {
            try {
                command(Command.BIND, offset, length);
                assertEquals(WcStatus.SUCCESS, WcStatus.valueOf(in.readUTF()), "the child's bind");
                return in.readInt();
            } catch (IOException e) {
                throw broken(e);
            }
        }

        WcStatus invalidate() {
            try {
                command(Command.INVALIDATE);
                return WcStatus.valueOf(in.readUTF());
            } catch (IOException e) {
                throw broken(e);
            }
        }

        byte[] dump(int region) {
            try {
                command(Command.DUMP, region);
                byte[] bytes = new byte[in.readInt()];
                in.readFully(bytes);
                return bytes;
            } catch (IOException e) {
                throw broken(e);
            }
        }

        List<Reported> completions(int atLeast) {
            try {
                command(Command.COMPLETIONS, atLeast);
                int n = in.readInt();
                List<Reported> all = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    WcStatus status = WcStatus.valueOf(in.readUTF());
                    WcOpcode opcode = WcOpcode.valueOf(in.readUTF());
                    long wrId = in.readLong();
                    int length = in.readInt();
                    boolean hasImmediate = in.readBoolean();
                    int immediate = in.readInt();
                    all.add(new Reported(status, opcode, wrId, length,
                            hasImmediate ? OptionalInt.of(immediate) : OptionalInt.empty()));
                }
                return all;
            } catch (IOException e) {
                throw broken(e);
            }
        }

        QpState state() {
            try {
                command(Command.STATE);
                return QpState.valueOf(in.readUTF());
            } catch (IOException e) {
                throw broken(e);
            }
        }

        /** Tells the child to close everything and exit; returns how many verbs objects it still had. */
        int exit() {
            try {
                command(Command.EXIT);
                return in.readInt();
            } catch (IOException e) {
                throw broken(e);
            }
        }

        private void command(Command command, int... args) throws IOException {
            out.writeUTF(command.name());
            for (int a : args) out.writeInt(a);
            out.flush();
        }

        /** The failure, with the child's exit code and stderr once it is done writing them. */
        private AssertionError broken(IOException e) {
            String how;
            try {
                how = process.waitFor(10, TimeUnit.SECONDS) ? "exited with " + process.exitValue() : "still runs";
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                how = "was not waited for";
            }
            return new AssertionError("the control connection to the child failed; the child " + how + ", stderr: "
                    + stderr(), e);
        }

        String stderr() {
            return read(stderrFile);
        }

        private static String read(Path file) {
            try {
                return Files.readString(file);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public void close() {
            try {
                control.close();
            } catch (IOException ignored) {
                // the child is being killed anyway
            } finally {
                process.destroyForcibly();
            }
        }
    }
}
