package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mooring.lifecycle.ResourceGraph;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** soft0 and soft1: every operation crosses the TCP fabric (inside one JVM; see also the two-process test). */
class SoftTcpConformanceTest extends VerbsConformance {
    /** Runs each side on a thread of its own: the common pool has one worker on two cores, which would take turns. */
    private static final Executor OWN_THREAD = task -> Thread.ofPlatform().start(task);

    @Override
    DeviceContext openFirst(ResourceGraph graph) {
        return RdmaDevices.open("soft:soft0", graph);
    }

    @Override
    DeviceContext openSecond(ResourceGraph graph) {
        return RdmaDevices.open("soft:soft1", graph);
    }

    /**
     * Both sides READ and WRITE each other at once, as much in flight as their send windows take: one connection
     * carries each side's requests and its answers to the other's, so a reader blocked writing answers to a peer whose
     * reader is blocked the same way would stall both for good. Every request completes, with the other side's bytes.
     */
    @Test
    void bothSidesKeepingTheirWindowsFullOfEachOthersRequestsNeverStall() throws Exception {
        a.qp.reset();
        b.qp.reset();
        connect(FAST.toBuilder().maxRdAtomic(16).maxDestRdAtomic(16).build());
        int size = 8192;
        int inFlight = 32;
        int rounds = 40;
        MemoryRegion aMemory = a.open((long) size * inFlight, 0xa1);
        MemoryRegion bMemory = b.open((long) size * inFlight, 0xb2);
        MemoryRegion aLocal = a.open((long) size * inFlight, 0);
        MemoryRegion bLocal = b.open((long) size * inFlight, 0);
        var fromA = CompletableFuture.runAsync(() -> flood(a, aLocal, bMemory, size, inFlight, rounds), OWN_THREAD);
        var fromB = CompletableFuture.runAsync(() -> flood(b, bLocal, aMemory, size, inFlight, rounds), OWN_THREAD);
        fromA.get(2, TimeUnit.MINUTES);
        fromB.get(2, TimeUnit.MINUTES);
        for (int i = 0; i < inFlight; i += 2) { // the READs' slots hold what they read
            assertEquals((byte) 0xb2, aLocal.segment().get(ValueLayout.JAVA_BYTE, (long) i * size + size - 1));
            assertEquals((byte) 0xa1, bLocal.segment().get(ValueLayout.JAVA_BYTE, (long) i * size + size - 1));
        }
    }

    /**
     * Both sides READ more than both sockets' buffers hold from each other at the same moment: a reader that wrote
     * its answer itself would block on a peer whose reader is stuck writing its own, each waiting for the other to
     * read, for good.
     */
    @Test
    void answersLargerThanTheSocketsBuffersBothWaysAtOnceNeverStall() throws Exception {
        int size = 64 << 20;
        MemoryRegion aMemory = a.open(size, 0xa1);
        MemoryRegion bMemory = b.open(size, 0xb2);
        MemoryRegion aLocal = a.open(size, 0);
        MemoryRegion bLocal = b.open(size, 0);
        var together = new CyclicBarrier(2);
        var fromA = CompletableFuture.runAsync(() -> readAtOnce(together, a, aLocal, bMemory, size), OWN_THREAD);
        var fromB = CompletableFuture.runAsync(() -> readAtOnce(together, b, bLocal, aMemory, size), OWN_THREAD);
        fromA.get(2, TimeUnit.MINUTES);
        fromB.get(2, TimeUnit.MINUTES);
        assertEquals((byte) 0xb2, aLocal.segment().get(ValueLayout.JAVA_BYTE, size - 1));
        assertEquals((byte) 0xa1, bLocal.segment().get(ValueLayout.JAVA_BYTE, size - 1));
    }

    private static void readAtOnce(CyclicBarrier together, Endpoint side, MemoryRegion local, MemoryRegion remote,
                                   int size) {
        for (int round = 0; round < 4; round++) {
            try {
                together.await(1, TimeUnit.MINUTES);
            } catch (Exception e) {
                throw new AssertionError("the other side did not come", e);
            }
            side.qp.post(WorkRequest.read(local, 0, size).remote(remote.address(), remote.rkey()).wrId(round));
            assertEquals(round, side.expect(WcStatus.SUCCESS).wrId());
        }
    }

    /**
     * READs, WRITEs and SENDs of many sizes in flight together — from 1 byte to past what a link's reader keeps its
     * buffer for (256 KiB), and back — each move their own bytes. The reader serves every request from one buffer it
     * reuses and the requester reads answers into arrays it gave back: one reused too early, or of another size, would
     * show here as another request's bytes.
     */
    @Test
    void requestsOfManySizesInFlightTogetherMoveTheirOwnBytes() {
        a.qp.reset();
        b.qp.reset();
        connect(FAST.toBuilder().maxRdAtomic(16).maxDestRdAtomic(16).build());
        int[] sizes = {1, 8192, 100, 300_000, 8192, 17, 65_536, 8192, 300_000, 3, 8192};
        long[] at = new long[sizes.length + 1];
        for (int k = 0; k < sizes.length; k++) at[k + 1] = at[k] + sizes[k];
        long total = at[sizes.length];
        MemoryRegion src = a.open(total, 0);
        MemoryRegion back = a.open(total, 0);
        MemoryRegion readable = b.open(total, 0);
        MemoryRegion writable = b.open(total, 0);
        MemoryRegion inbox = b.open(total, 0);
        for (long i = 0; i < total; i++) {
            src.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
            readable.segment().set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13 + 5));
        }
        for (int k = 0; k < sizes.length; k++) b.qp.post(ReceiveRequest.into(inbox, at[k], sizes[k]).wrId(k));
        for (int k = 0; k < sizes.length; k++) {
            a.qp.post(WorkRequest.read(back, at[k], sizes[k]).remote(readable.address() + at[k], readable.rkey())
                    .wrId(3L * k));
            a.qp.post(WorkRequest.write(src, at[k], sizes[k]).remote(writable.address() + at[k], writable.rkey())
                    .wrId(3L * k + 1));
            a.qp.post(WorkRequest.send(src, at[k], sizes[k]).wrId(3L * k + 2));
        }
        for (int i = 0; i < 3 * sizes.length; i++) assertEquals(i, a.expect(WcStatus.SUCCESS).wrId());
        for (int k = 0; k < sizes.length; k++) assertEquals(k, b.expect(WcStatus.SUCCESS).wrId());
        assertEquals(-1, back.segment().mismatch(readable.segment()), "what the READs brought");
        assertEquals(-1, writable.segment().mismatch(src.segment()), "what the WRITEs left");
        assertEquals(-1, inbox.segment().mismatch(src.segment()), "what the SENDs delivered");
    }

    /** {@code rounds} times: {@code inFlight} READs and WRITEs (alternating) of {@code remote}, then their completions. */
    private static void flood(Endpoint side, MemoryRegion local, MemoryRegion remote, int size, int inFlight,
                              int rounds) {
        for (int round = 0; round < rounds; round++) {
            for (int i = 0; i < inFlight; i++) {
                long at = (long) i * size;
                WorkRequest wr = i % 2 == 0 ? WorkRequest.read(local, at, size) : WorkRequest.write(local, at, size);
                side.qp.post(wr.remote(remote.address() + at, remote.rkey()).wrId(i));
            }
            for (int i = 0; i < inFlight; i++) assertEquals(i, side.expect(WcStatus.SUCCESS).wrId());
        }
    }
}
