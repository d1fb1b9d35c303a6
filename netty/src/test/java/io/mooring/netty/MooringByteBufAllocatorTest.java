package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.RdmaArena;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.verbs.MemoryRegion;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.IllegalReferenceCountException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The allocator's promises, through its public API: registered memory, reference counts as block lifetimes. */
class MooringByteBufAllocatorTest {
    private final BufferFixture f = new BufferFixture();

    @AfterEach
    void close() throws InterruptedException {
        f.close();
    }

    @Test
    void aDirectBufferIsASliceOfRegisteredMemoryWithItsKeys() {
        ByteBuf buf = f.allocator.directBuffer(100);
        try {
            assertTrue(buf.isDirect());
            assertTrue(buf.hasMemoryAddress());
            assertTrue(MooringBuffers.isRegistered(buf));
            MemoryRegion region = MooringBuffers.region(buf);
            long offset = MooringBuffers.regionOffset(buf, 0);
            assertEquals(region.address() + offset, buf.memoryAddress());
            assertTrue(offset >= 0 && offset + 100 <= region.length(), "the buffer lies inside its region");
            assertEquals(region.lkey(), MooringBuffers.lkey(buf));
            assertEquals(region.rkey(), MooringBuffers.rkey(buf));
            assertEquals(offset + 7, MooringBuffers.regionOffset(buf, 7));
            assertEquals(1, f.liveBlocks());
        } finally {
            assertTrue(buf.release());
        }
        assertEquals(0, f.liveBlocks(), "the release to 0 gave the block back");
    }

    @Test
    void aCopyIsARegisteredBufferOfItsOwn() {
        ByteBuf buf = f.allocator.directBuffer(16).writeLong(7);
        ByteBuf copy = buf.copy();
        buf.release();
        assertTrue(MooringBuffers.isRegistered(copy));
        assertEquals(7, copy.readLong());
        copy.release();
    }

    @Test
    void everyKindOfDirectRequestIsRegisteredAndHeapIsDelegated() {
        for (ByteBuf buf : new ByteBuf[] {f.allocator.buffer(), f.allocator.buffer(10), f.allocator.ioBuffer(10, 20),
                f.allocator.directBuffer()}) {
            assertTrue(MooringBuffers.isRegistered(buf), buf.toString());
            buf.release();
        }
        ByteBuf heap = f.allocator.heapBuffer(10);
        assertFalse(heap.isDirect());
        assertFalse(MooringBuffers.isRegistered(heap));
        heap.release();
        assertTrue(f.allocator.isDirectBufferPooled());
        assertSame(f.arena, f.allocator.arena());
        assertEquals(0, f.liveBlocks(), "heap buffers take no block");
    }

    @Test
    void anEmptyDirectBufferStillHasKeys() {
        ByteBuf buf = f.allocator.directBuffer(0, 64);
        assertEquals(0, buf.capacity());
        MooringBuffers.lkey(buf);
        buf.writeLong(42);
        assertEquals(42, buf.readLong());
        buf.release();
    }

    @Test
    void aViewOfABufferSharesItsCountAndKeepsItsBlock() {
        ByteBuf buf = f.allocator.directBuffer(64).writeBytes("registered".getBytes(StandardCharsets.US_ASCII));
        ByteBuf slice = buf.retainedSlice(2, 4);
        ByteBuf duplicate = buf.duplicate();
        ByteBuf readOnly = buf.asReadOnly();
        assertEquals(2, buf.refCnt());
        assertFalse(buf.release(), "the slice still holds a count");
        assertEquals(1, f.liveBlocks(), "a buffer still referenced keeps its block");
        assertEquals("gist", slice.toString(StandardCharsets.US_ASCII));
        assertEquals(buf.memoryAddress() + 2, slice.memoryAddress());
        assertEquals(MooringBuffers.regionOffset(buf, 2), MooringBuffers.regionOffset(slice, 0));
        assertEquals(MooringBuffers.lkey(buf), MooringBuffers.lkey(readOnly));
        assertEquals(MooringBuffers.lkey(buf), MooringBuffers.lkey(duplicate));
        assertTrue(slice.release());
        assertEquals(0, f.liveBlocks());
        assertThrows(IllegalReferenceCountException.class, () -> duplicate.getByte(0), "a view dies with the buffer");
        assertThrows(IllegalReferenceCountException.class, () -> MooringBuffers.lkey(slice));
    }

    @Test
    void aReleasedBufferThrowsInsteadOfReachingTheNextOwnersBytes() {
        ByteBuf stale = f.allocator.directBuffer(64).writeLong(1);
        long address = stale.memoryAddress();
        stale.release();
        ByteBuf next = f.allocator.directBuffer(64).writeLong(2);
        assertEquals(address, next.memoryAddress(), "the arena reuses the block at once (its thread cache)");
        assertThrows(IllegalReferenceCountException.class, () -> stale.getLong(0));
        assertThrows(IllegalReferenceCountException.class, () -> stale.setLong(0, 3));
        assertThrows(IllegalReferenceCountException.class, stale::memoryAddress);
        assertThrows(IllegalReferenceCountException.class, stale::retain);
        assertThrows(IllegalReferenceCountException.class, stale::release, "a second release");
        assertEquals(2, next.getLong(0), "the next owner's bytes are untouched");
        next.release();
    }

    @Test
    void countsMoveByTheAmountsGivenAndRefuseBadOnes() {
        ByteBuf buf = f.allocator.directBuffer(8);
        buf.retain(3).touch().touch("hint");
        assertEquals(4, buf.refCnt());
        assertThrows(IllegalArgumentException.class, () -> buf.retain(0));
        assertThrows(IllegalArgumentException.class, () -> buf.release(-1));
        assertThrows(IllegalReferenceCountException.class, () -> buf.release(5), "more than it holds");
        assertThrows(IllegalReferenceCountException.class, () -> buf.retain(Integer.MAX_VALUE), "an overflow");
        assertEquals(4, buf.refCnt(), "a refused change changes nothing");
        assertFalse(buf.release(3));
        assertTrue(buf.release(1));
        assertEquals(0, buf.refCnt());
    }

    @Test
    void growingPastTheBlockMovesTheBytesAndGivesTheOldBlockBack() {
        ByteBuf buf = f.allocator.directBuffer(16, 1 << 20);
        byte[] data = new byte[100_000];
        for (int i = 0; i < data.length; i++) data[i] = (byte) (i * 31);
        buf.writeBytes(data); // ensureWritable grows it step by step
        assertTrue(buf.capacity() >= data.length);
        byte[] back = new byte[data.length];
        buf.getBytes(0, back);
        assertArrayEquals(data, back);
        assertEquals(1, f.liveBlocks(), "every outgrown block went back");
        assertTrue(MooringBuffers.regionOffset(buf, 0) + buf.capacity() <= MooringBuffers.region(buf).length());

        buf.capacity(10); // shrinking keeps the block and trims the indices
        assertEquals(10, buf.capacity());
        assertEquals(10, buf.writerIndex());
        assertEquals((byte) 31, buf.getByte(1));
        buf.capacity(200_000);
        assertEquals((byte) (9 * 31), buf.getByte(9), "the bytes within the old capacity move with a growth");
        assertThrows(IllegalArgumentException.class, () -> buf.capacity(-1));
        assertThrows(IllegalArgumentException.class, () -> buf.capacity((1 << 20) + 1), "past the max capacity");
        assertThrows(IndexOutOfBoundsException.class, () -> buf.writerIndex(buf.capacity()).writeBytes(new byte[1 << 20]));
        buf.release();
    }

    @Test
    void badRequestsGetNettysUsualExceptions() {
        assertThrows(IllegalArgumentException.class, () -> f.allocator.directBuffer(-1));
        assertThrows(IllegalArgumentException.class, () -> f.allocator.directBuffer(10, 5), "initial > max");
        assertThrows(IllegalArgumentException.class, () -> f.allocator.buffer(0, -1));
        assertThrows(IllegalArgumentException.class, () -> f.allocator.heapBuffer(-1));
        assertThrows(NullPointerException.class, () -> new MooringByteBufAllocator(null));
        assertThrows(NullPointerException.class,
                () -> new MooringByteBufAllocator(f.arena, null, ReleasePattern.SAME_THREAD));
        assertThrows(NullPointerException.class, () -> new MooringByteBufAllocator(f.arena, f.allocator, null));
        assertEquals(0, f.allocator.directBuffer(0, 0).capacity(), "Netty's empty buffer");
    }

    @Test
    void aForeignBufferHasNoRegistration() {
        ByteBuf heap = Unpooled.buffer(8);
        ByteBuf foreignDirect = Unpooled.directBuffer(8);
        var composite = Unpooled.compositeBuffer().addComponent(f.allocator.directBuffer(8));
        for (ByteBuf buf : new ByteBuf[] {heap, foreignDirect, composite}) {
            assertFalse(MooringBuffers.isRegistered(buf));
            var e = assertThrows(IllegalArgumentException.class, () -> MooringBuffers.lkey(buf));
            assertTrue(e.getMessage().contains("copy it into one first"), e.getMessage());
            buf.release();
        }
        ByteBuf buf = f.allocator.directBuffer(8);
        assertThrows(IndexOutOfBoundsException.class, () -> MooringBuffers.regionOffset(buf, 9));
        assertThrows(IndexOutOfBoundsException.class, () -> MooringBuffers.regionOffset(buf, -1));
        buf.release();
    }

    @Test
    void anArenaWithoutRemoteRightsHasNoRkeyToGive() {
        RdmaArena local = RdmaArena.builder(f.context.allocateProtectionDomain()).chunkSize(1 << 20).build();
        ByteBuf buf = new MooringByteBufAllocator(local).directBuffer(8);
        assertThrows(IllegalStateException.class, () -> MooringBuffers.rkey(buf));
        assertNotEquals(0, MooringBuffers.region(buf).length());
        buf.release();
        local.close();
    }

    @Test
    void aClosedArenaRefusesNewBuffers() {
        RdmaArena other = RdmaArena.builder(f.context.allocateProtectionDomain()).chunkSize(1 << 20).build();
        var allocator = new MooringByteBufAllocator(other);
        other.close();
        assertThrows(ResourceClosedException.class, () -> allocator.directBuffer(8)); // the arena's own typed error
    }
}
