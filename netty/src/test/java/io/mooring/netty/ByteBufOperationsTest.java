package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every {@code ByteBuf} operation the buffer implements, checked against Netty's own heap buffer: the same random
 * sequence of operations runs on both, and each result and the whole contents and indices must be equal after every
 * step. Netty's heap buffer is the reference — its behaviour is Netty's.
 */
class ByteBufOperationsTest {
    private static final int CAPACITY = 256;
    private final BufferFixture f = new BufferFixture();
    @TempDir
    Path dir;

    @AfterEach
    void close() throws InterruptedException {
        f.close();
    }

    /** One operation: applied to a buffer, with its result (null if none) in a comparable form. */
    private interface Op {
        Object apply(ByteBuf buf) throws IOException;
    }

    @SuppressWarnings("deprecation") // order(ByteOrder): still how older code reads little-endian
    private List<Op> operations(Random random) {
        var ops = new ArrayList<Op>();
        int i = random.nextInt(CAPACITY - 8);
        long v = random.nextLong();
        int length = random.nextInt(CAPACITY - i);
        byte[] bytes = new byte[length];
        random.nextBytes(bytes);
        ops.add(b -> b.setByte(i, (int) v).getByte(i));
        ops.add(b -> b.setShort(i, (int) v).getShort(i));
        ops.add(b -> b.setShortLE(i, (int) v).getShortLE(i));
        ops.add(b -> b.setMedium(i, (int) v).getUnsignedMedium(i) + " " + b.getMedium(i));
        ops.add(b -> b.setMediumLE(i, (int) v).getUnsignedMediumLE(i) + " " + b.getMediumLE(i));
        ops.add(b -> b.setInt(i, (int) v).getInt(i) + " " + b.getUnsignedInt(i));
        ops.add(b -> b.setIntLE(i, (int) v).getIntLE(i) + " " + b.getUnsignedIntLE(i));
        ops.add(b -> b.setLong(i, v).getLong(i));
        ops.add(b -> b.setLongLE(i, v).getLongLE(i));
        ops.add(b -> b.setDouble(i, Double.longBitsToDouble(v)).getDouble(i));
        ops.add(b -> b.setFloatLE(i, Float.intBitsToFloat((int) v)).getFloatLE(i));
        ops.add(b -> b.setChar(i, (int) v).getChar(i));
        ops.add(b -> b.getUnsignedShort(i) + " " + b.getUnsignedShortLE(i) + " " + b.getUnsignedByte(i));
        ops.add(b -> b.order(ByteOrder.LITTLE_ENDIAN).getLong(i));
        ops.add(b -> b.setBytes(i, bytes).getByte(i));
        ops.add(b -> b.setBytes(i, ByteBuffer.wrap(bytes)).getByte(i));
        ops.add(b -> b.setBytes(i, ByteBuffer.allocateDirect(length).put(bytes).flip()).getByte(i));
        ops.add(b -> b.setBytes(i, Unpooled.wrappedBuffer(bytes), 0, length).getByte(i));
        ops.add(b -> copyFromDirect(b, i, bytes));
        ops.add(b -> copyFromMooring(b, i, bytes));
        ops.add(b -> b.setBytes(i, new ByteArrayInputStream(bytes), length));
        ops.add(b -> b.setZero(i, length).getByte(i));
        ops.add(b -> {
            byte[] out = new byte[length];
            b.getBytes(i, out);
            return Arrays.toString(out);
        });
        ops.add(b -> {
            ByteBuffer out = ByteBuffer.allocateDirect(length);
            b.getBytes(i, out);
            return ByteBufUtil.hexDump(Unpooled.wrappedBuffer(out.flip()));
        });
        ops.add(b -> {
            ByteBuf out = Unpooled.directBuffer(length);
            b.getBytes(i, out, length);
            String s = ByteBufUtil.hexDump(out);
            out.release();
            return s;
        });
        ops.add(b -> {
            ByteBuf out = Unpooled.buffer(length);
            b.getBytes(i, out, 0, length);
            return ByteBufUtil.hexDump(out.writerIndex(length));
        });
        ops.add(b -> {
            var out = new ByteArrayOutputStream();
            b.getBytes(i, out, length);
            return Arrays.toString(out.toByteArray());
        });
        ops.add(b -> {
            ByteBuffer view = b.nioBuffer(i, length);
            return ByteBufUtil.hexDump(Unpooled.wrappedBuffer(view)) + " " + view.order() + " " + view.position();
        });
        ops.add(b -> b.nioBufferCount() + " " + b.nioBuffers(i, length).length + " " + b.internalNioBuffer(i, length).remaining());
        ops.add(b -> {
            ByteBuf copy = b.copy(i, length);
            String s = ByteBufUtil.hexDump(copy) + " " + copy.maxCapacity();
            copy.release();
            return s;
        });
        ops.add(b -> b.indexOf(0, CAPACITY, (byte) v) + " " + b.bytesBefore((byte) v) + " " + b.forEachByte(x -> x != (byte) v));
        ops.add(b -> b.setIndex(i, i + length).toString(StandardCharsets.ISO_8859_1));
        ops.add(b -> b.writerIndex(i).writeCharSequence("mooring über", StandardCharsets.UTF_8));
        ops.add(b -> b.writerIndex(i).writeLong(v).writeIntLE((int) v).writeMedium((int) v).writeShortLE((int) v)
                .writeByte((int) v).writerIndex());
        ops.add(b -> b.setIndex(i, CAPACITY).readLong() + " " + b.readerIndex());
        ops.add(b -> {
            b.setIndex(i, i + length).discardReadBytes();
            return b.readerIndex() + " " + b.writerIndex();
        });
        ops.add(b -> ByteBufUtil.hashCode(b.setIndex(0, CAPACITY)));
        return ops;
    }

    /** Reading into a foreign direct buffer, which has a memory address, and back. */
    private static Object copyFromDirect(ByteBuf b, int i, byte[] bytes) {
        ByteBuf src = Unpooled.directBuffer(bytes.length).writeBytes(bytes);
        b.setBytes(i, src, 0, bytes.length);
        src.release();
        return b.getByte(i);
    }

    private Object copyFromMooring(ByteBuf b, int i, byte[] bytes) {
        ByteBuf src = f.allocator.directBuffer(bytes.length).writeBytes(bytes);
        b.setBytes(i, src.slice(), 0, bytes.length);
        src.release();
        return b.getByte(i);
    }

    @Test
    void everyOperationBehavesAsNettysHeapBuffer() throws IOException {
        var random = new Random(27);
        ByteBuf mine = f.allocator.directBuffer(CAPACITY);
        ByteBuf netty = Unpooled.buffer(CAPACITY);
        mine.writerIndex(CAPACITY);
        netty.writerIndex(CAPACITY);
        for (int step = 0; step < 3000; step++) {
            List<Op> ops = operations(random);
            int k = random.nextInt(ops.size());
            Op op = ops.get(k);
            mine.setIndex(0, CAPACITY);
            netty.setIndex(0, CAPACITY);
            assertEquals(String.valueOf(op.apply(netty)), String.valueOf(op.apply(mine)), "step " + step + ", op " + k);
            assertEquals(netty.readerIndex(), mine.readerIndex(), "step " + step);
            assertEquals(netty.writerIndex(), mine.writerIndex(), "step " + step);
            assertEquals(ByteBufUtil.hexDump(netty, 0, CAPACITY), ByteBufUtil.hexDump(mine, 0, CAPACITY), "step " + step);
        }
        mine.release();
        netty.release();
    }

    @Test
    void channelsReadIntoAndWriteFromTheRegisteredMemory() throws IOException {
        byte[] data = new byte[20_000];
        new Random(7).nextBytes(data);
        Path file = dir.resolve("data");
        ByteBuf buf = f.allocator.directBuffer(data.length).writeBytes(data);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.READ)) {
            assertEquals(data.length, buf.getBytes(0, ch, 0L, data.length));
            assertEquals(100, buf.readBytes(ch, 100));
            ByteBuf in = f.allocator.directBuffer(data.length);
            assertEquals(data.length, in.setBytes(0, ch, 0L, data.length));
            assertEquals(-1, in.setBytes(0, ch, data.length, 10), "past the file's end");
            in.writerIndex(data.length);
            assertArrayEquals(data, ByteBufUtil.getBytes(in));
            ch.position(0);
            assertEquals(50, in.clear().writeBytes(ch, 50));
            in.release();
        }
        FileChannel closed = FileChannel.open(file, StandardOpenOption.READ);
        closed.close();
        assertEquals(-1, buf.setBytes(0, closed, 0L, 10), "Netty's contract: a closed channel reads as its end");
        assertEquals(-1, buf.setBytes(0, new ByteArrayInputStream(new byte[0]), 10), "a stream's end");
        buf.release();
    }

    @Test
    void outOfRangeAccessesThrowAndChangeNothing() {
        ByteBuf buf = f.allocator.directBuffer(16, 16).writeLong(1).writeLong(2);
        assertThrows(IndexOutOfBoundsException.class, () -> buf.getLong(9));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.setInt(-1, 0));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.getBytes(8, new byte[9]));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.setBytes(0, new byte[4], 2, 3));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.nioBuffer(10, 7));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.copy(0, 17));
        assertThrows(IndexOutOfBoundsException.class, () -> buf.writeByte(0), "full at its max capacity");
        assertThrows(UnsupportedOperationException.class, buf::array);
        assertEquals(1, buf.getLong(0));
        assertEquals(2, buf.getLong(8));
        buf.release();
    }
}
