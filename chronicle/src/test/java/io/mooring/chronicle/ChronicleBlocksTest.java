package io.mooring.chronicle;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.RdmaDevices;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.BytesStore;
import net.openhft.chronicle.bytes.util.DecoratedBufferOverflowException;
import net.openhft.chronicle.bytes.util.DecoratedBufferUnderflowException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class ChronicleBlocksTest {
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED;
    private static final byte FILL = 0x5A;

    private final ResourceGraph graph = ResourceGraph.builder().name("chronicle-test").build();
    private final RdmaArena arena = RdmaArena.builder(RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain())
            .chunkSize(1 << 20).shards(1).build();

    @AfterEach
    void teardown() {
        arena.close();
        graph.close();
        assertEquals(0, graph.liveCount(), graph::dump);
    }

    @Test
    void recordsWrittenWithChronicleAreInTheBlocksMemory() {
        try (Block block = arena.allocate(256)) {
            Bytes<Void> out = ChronicleBlocks.bytes(block);
            out.writeLong(42).writeInt(-7).writeUtf8("héllo").writeDouble(2.5);
            MemorySegment m = block.segment();
            assertEquals(42, m.get(LONG, 0));
            assertEquals(-7, m.get(INT, 8));
            byte[] utf8 = "héllo".getBytes(StandardCharsets.UTF_8);
            assertEquals(utf8.length, m.get(ValueLayout.JAVA_BYTE, 12), "stop-bit length, one byte when short");
            assertArrayEquals(utf8, m.asSlice(13, utf8.length).toArray(ValueLayout.JAVA_BYTE));
            assertEquals(2.5, m.get(ValueLayout.JAVA_DOUBLE_UNALIGNED, 13 + utf8.length));
            assertEquals(21 + utf8.length, out.writePosition());

            assertEquals(42, out.readLong());
            assertEquals(-7, out.readInt());
            assertEquals("héllo", out.readUtf8());
            assertEquals(2.5, out.readDouble());
            out.releaseLast();
            assertEquals(42, m.get(LONG, 0), "releasing the view frees nothing");
        }
    }

    @Test
    void recordsWrittenThroughTheSegmentAreReadWithChronicle() {
        try (Block block = arena.allocate(64)) {
            MemorySegment m = block.segment();
            for (int i = 0; i < 8; i++) m.set(LONG, 8L * i, 1000 + i);

            Bytes<Void> in = ChronicleBlocks.bytes(block);
            in.writePosition(24); // three records are there
            assertEquals(1000, in.readLong());
            assertEquals(1001, in.readLong());
            assertEquals(1002, in.readLong());
            assertThrows(DecoratedBufferUnderflowException.class, in::readLong, "only three were exposed");
            in.releaseLast();

            BytesStore<?, Void> store = ChronicleBlocks.bytesStore(block);
            assertEquals(64, store.capacity());
            assertEquals(1007, store.readLong(56));
            store.writeInt(4, 99);
            assertEquals(99, m.get(INT, 4));
            store.releaseLast();
        }
    }

    @Test
    void writingPastTheBlockFailsAndLeavesItsNeighboursAlone() {
        List<Block> run = adjacentBlocks(64, 3);
        Block left = run.get(0);
        Block block = run.get(1);
        Block right = run.get(2);
        left.segment().fill(FILL);
        right.segment().fill(FILL);

        Bytes<Void> out = ChronicleBlocks.bytes(block);
        for (int i = 0; i < 8; i++) out.writeLong(i);
        overflows(() -> out.writeLong(8), left, right);
        overflows(() -> out.writeByte((byte) 1), left, right);
        out.clear();
        overflows(() -> out.write8bit("x".repeat(100)), left, right);
        overflows(() -> out.writeLong(60, -1L), left, right);
        overflows(() -> out.writeSkip(65), left, right);
        overflows(() -> out.writeLimit(65), left, right);
        out.releaseLast();

        BytesStore<?, Void> store = ChronicleBlocks.bytesStore(block);
        overflows(() -> store.writeLong(60, -1L), left, right);
        overflows(() -> store.write(40, new byte[40]), left, right);
        assertThrows(IllegalArgumentException.class, () -> store.writeLong(-8, -1L));
        assertThrows(DecoratedBufferUnderflowException.class, () -> store.readLong(60));
        Bytes<?> fromStore = store.bytesForWrite();
        overflows(() -> fromStore.write(new byte[65]), left, right);
        fromStore.releaseLast();
        store.releaseLast();
        untouched(left, right);
        run.forEach(Block::close);
    }

    @Test
    void aClosedBlockOrAnotherThreadsBlockGivesNoView() throws Exception {
        Block closed = arena.allocate(64);
        closed.close();
        assertThrows(ResourceClosedException.class, () -> ChronicleBlocks.bytes(closed));

        try (Block confined = arena.allocate(64)) {
            var e = CompletableFuture.supplyAsync(() -> {
                try {
                    ChronicleBlocks.bytesStore(confined);
                    return null;
                } catch (WrongThreadException expected) {
                    return expected;
                }
            }).get();
            assertTrue(e != null && e.getMessage().contains("held by another thread"), "refused on another thread");
        }
        try (Block shared = arena.allocateShared(64, 8)) {
            long first = CompletableFuture.supplyAsync(() -> {
                BytesStore<?, Void> store = ChronicleBlocks.bytesStore(shared);
                store.writeLong(0, 77);
                store.releaseLast();
                return shared.segment().get(LONG, 0);
            }).get();
            assertEquals(77, first);
        }
    }

    /** The write fails with Chronicle's exception and neither neighbour changed. */
    private static void overflows(Executable write, Block left, Block right) {
        assertThrows(DecoratedBufferOverflowException.class, write);
        untouched(left, right);
    }

    private static void untouched(Block... neighbours) {
        for (Block n : neighbours) {
            byte[] bytes = n.segment().toArray(ValueLayout.JAVA_BYTE);
            for (int i = 0; i < bytes.length; i++) {
                assertEquals(FILL, bytes[i], "byte " + i + " of neighbour " + n);
            }
        }
    }

    /** {@code count} blocks of {@code size} bytes lying back to back (same slab), in address order. */
    private List<Block> adjacentBlocks(long size, int count) {
        List<Block> all = new ArrayList<>();
        for (int i = 0; i < 16; i++) all.add(arena.allocate(size));
        all.sort((a, b) -> Long.compare(a.address(), b.address()));
        for (int i = 0; i + count <= all.size(); i++) {
            List<Block> run = all.subList(i, i + count);
            if (run.getLast().address() - run.getFirst().address() == (count - 1) * size) {
                List<Block> found = List.copyOf(run);
                all.stream().filter(b -> !found.contains(b)).forEach(Block::close);
                return found;
            }
        }
        throw new AssertionError("no " + count + " adjacent blocks of " + size + " bytes among " + all);
    }
}
