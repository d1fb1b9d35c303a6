package io.mooring.netty;

import static io.mooring.netty.RegisteredMemory.INT_BE;
import static io.mooring.netty.RegisteredMemory.INT_LE;
import static io.mooring.netty.RegisteredMemory.LONG_BE;
import static io.mooring.netty.RegisteredMemory.LONG_LE;
import static io.mooring.netty.RegisteredMemory.SHORT_BE;
import static io.mooring.netty.RegisteredMemory.SHORT_LE;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.mooring.allocator.Block;
import io.netty.buffer.AbstractByteBuf;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.IllegalReferenceCountException;
import io.netty.util.internal.ObjectUtil;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.ScatteringByteChannel;

/**
 * A direct buffer over one {@link Block}: its memory is the block's, its reference count the block's lifetime (the
 * release to 0 closes the block). Accessed by address through {@link RegisteredMemory.All}, after Netty's own index and
 * reference-count checks ({@code AbstractByteBuf.checkIndex}).
 */
final class RegisteredByteBuf extends AbstractByteBuf {
    private static final VarHandle REF_CNT;
    /** Bytes copied through the heap per step by the stream methods. */
    private static final int STREAM_CHUNK = 8192;

    static {
        try {
            REF_CNT = MethodHandles.lookup().findVarHandle(RegisteredByteBuf.class, "refCnt", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final MooringByteBufAllocator alloc;
    // The memory, replaced when the buffer grows past it; null once released. Not volatile: like any Netty buffer's
    // state, whoever passes the buffer to another thread orders it (a channel's queue, an executor).
    private Block block;
    private long address;
    private int capacity;
    @SuppressWarnings("unused") // through REF_CNT
    private volatile int refCnt;

    RegisteredByteBuf(MooringByteBufAllocator alloc, int initialCapacity, int maxCapacity) {
        super(maxCapacity);
        this.alloc = alloc;
        Block b = alloc.allocateBlock(initialCapacity);
        this.block = b;
        this.address = b.address();
        this.capacity = initialCapacity;
        REF_CNT.set(this, 1); // a plain store, as Netty's own buffers: publishing the buffer orders it
    }

    /** A buffer over {@code b}, which it now owns, holding its first {@code length} bytes (a received message). */
    RegisteredByteBuf(MooringByteBufAllocator alloc, Block b, int length) {
        super(Integer.MAX_VALUE);
        this.alloc = alloc;
        this.block = b;
        this.address = b.address();
        this.capacity = (int) Math.min(Integer.MAX_VALUE, b.size());
        writerIndex(length);
        REF_CNT.set(this, 1);
    }

    /** The block under the buffer; throws as any access does once the buffer is released (also by a racing release). */
    Block block() {
        ensureAccessible();
        Block b = block;
        if (b == null) throw new IllegalReferenceCountException(0);
        return b;
    }

    // ---- reference counting: the block's lifetime --------------------------------------------------------------

    @Override
    public int refCnt() {
        return refCnt;
    }

    @Override
    public ByteBuf retain() {
        return retain0(1);
    }

    @Override
    public ByteBuf retain(int increment) {
        return retain0(ObjectUtil.checkPositive(increment, "increment"));
    }

    private ByteBuf retain0(int increment) {
        while (true) {
            int count = refCnt;
            if (count <= 0 || count + increment < count) throw new IllegalReferenceCountException(count, increment);
            if (REF_CNT.compareAndSet(this, count, count + increment)) return this;
        }
    }

    @Override
    public boolean release() {
        return release0(1);
    }

    @Override
    public boolean release(int decrement) {
        return release0(ObjectUtil.checkPositive(decrement, "decrement"));
    }

    private boolean release0(int decrement) {
        while (true) {
            int count = refCnt;
            if (count < decrement) throw new IllegalReferenceCountException(count, -decrement);
            if (REF_CNT.compareAndSet(this, count, count - decrement)) {
                if (count != decrement) return false;
                Block b = block;
                block = null;
                b.close(); // on another thread than the owner, the arena's mt free
                return true;
            }
        }
    }

    @Override
    public ByteBuf touch() {
        return this;
    }

    @Override
    public ByteBuf touch(Object hint) {
        return this;
    }

    // ---- capacity -----------------------------------------------------------------------------------------------

    @Override
    public int capacity() {
        return capacity;
    }

    /**
     * Within the block's size only the capacity changes; past it the bytes move to a new block of the new capacity
     * and the old block goes back to the arena.
     */
    @Override
    public ByteBuf capacity(int newCapacity) {
        checkNewCapacity(newCapacity);
        if (newCapacity > block.size()) {
            Block bigger = alloc.allocateBlock(newCapacity);
            MemorySegment.copy(RegisteredMemory.All.MEMORY, address, RegisteredMemory.All.MEMORY, bigger.address(),
                    capacity);
            Block old = block;
            block = bigger;
            address = bigger.address();
            old.close();
        } else if (newCapacity < capacity) {
            trimIndicesToCapacity(newCapacity);
        }
        capacity = newCapacity;
        return this;
    }

    @Override
    public ByteBufAllocator alloc() {
        return alloc;
    }

    @Override
    @Deprecated // Netty deprecates the method, not the override every buffer must give
    public ByteOrder order() {
        return ByteOrder.BIG_ENDIAN;
    }

    @Override
    public ByteBuf unwrap() {
        return null;
    }

    @Override
    public boolean isDirect() {
        return true;
    }

    @Override
    public boolean isContiguous() {
        return true;
    }

    @Override
    public boolean hasArray() {
        return false;
    }

    @Override
    public byte[] array() {
        throw new UnsupportedOperationException("a direct buffer of registered memory has no array");
    }

    @Override
    public int arrayOffset() {
        throw new UnsupportedOperationException("a direct buffer of registered memory has no array");
    }

    @Override
    public boolean hasMemoryAddress() {
        return true;
    }

    @Override
    public long memoryAddress() {
        ensureAccessible();
        return address;
    }

    // ---- primitive access (indices checked by AbstractByteBuf) -------------------------------------------------

    private static MemorySegment memory() {
        return RegisteredMemory.All.MEMORY;
    }

    @Override
    protected byte _getByte(int index) {
        return memory().get(JAVA_BYTE, address + index);
    }

    @Override
    protected short _getShort(int index) {
        return memory().get(SHORT_BE, address + index);
    }

    @Override
    protected short _getShortLE(int index) {
        return memory().get(SHORT_LE, address + index);
    }

    @Override
    protected int _getUnsignedMedium(int index) {
        return (_getByte(index) & 0xff) << 16 | _getShort(index + 1) & 0xffff;
    }

    @Override
    protected int _getUnsignedMediumLE(int index) {
        return _getByte(index) & 0xff | (_getShortLE(index + 1) & 0xffff) << 8;
    }

    @Override
    protected int _getInt(int index) {
        return memory().get(INT_BE, address + index);
    }

    @Override
    protected int _getIntLE(int index) {
        return memory().get(INT_LE, address + index);
    }

    @Override
    protected long _getLong(int index) {
        return memory().get(LONG_BE, address + index);
    }

    @Override
    protected long _getLongLE(int index) {
        return memory().get(LONG_LE, address + index);
    }

    @Override
    protected void _setByte(int index, int value) {
        memory().set(JAVA_BYTE, address + index, (byte) value);
    }

    @Override
    protected void _setShort(int index, int value) {
        memory().set(SHORT_BE, address + index, (short) value);
    }

    @Override
    protected void _setShortLE(int index, int value) {
        memory().set(SHORT_LE, address + index, (short) value);
    }

    @Override
    protected void _setMedium(int index, int value) {
        _setByte(index, value >>> 16);
        _setShort(index + 1, value);
    }

    @Override
    protected void _setMediumLE(int index, int value) {
        _setByte(index, value);
        _setShortLE(index + 1, value >>> 8);
    }

    @Override
    protected void _setInt(int index, int value) {
        memory().set(INT_BE, address + index, value);
    }

    @Override
    protected void _setIntLE(int index, int value) {
        memory().set(INT_LE, address + index, value);
    }

    @Override
    protected void _setLong(int index, long value) {
        memory().set(LONG_BE, address + index, value);
    }

    @Override
    protected void _setLongLE(int index, long value) {
        memory().set(LONG_LE, address + index, value);
    }

    // ---- bulk transfers ------------------------------------------------------------------------------------------

    @Override
    public ByteBuf getBytes(int index, ByteBuf dst, int dstIndex, int length) {
        checkDstIndex(index, length, dstIndex, dst.capacity());
        if (dst.hasMemoryAddress()) {
            MemorySegment.copy(memory(), address + index, memory(), dst.memoryAddress() + dstIndex, length);
        } else if (dst.hasArray()) {
            getBytes(index, dst.array(), dst.arrayOffset() + dstIndex, length);
        } else {
            dst.setBytes(dstIndex, this, index, length);
        }
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, byte[] dst, int dstIndex, int length) {
        checkDstIndex(index, length, dstIndex, dst.length);
        MemorySegment.copy(memory(), JAVA_BYTE, address + index, dst, dstIndex, length);
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, ByteBuffer dst) {
        int length = dst.remaining();
        checkIndex(index, length);
        MemorySegment.ofBuffer(dst).copyFrom(memory().asSlice(address + index, length));
        dst.position(dst.position() + length);
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, OutputStream out, int length) throws IOException {
        checkIndex(index, length);
        byte[] chunk = new byte[Math.min(length, STREAM_CHUNK)];
        for (int done = 0; done < length; ) {
            int n = Math.min(chunk.length, length - done);
            MemorySegment.copy(memory(), JAVA_BYTE, address + index + done, chunk, 0, n);
            out.write(chunk, 0, n);
            done += n;
        }
        return this;
    }

    @Override
    public int getBytes(int index, GatheringByteChannel out, int length) throws IOException {
        checkIndex(index, length);
        return out.write(view(index, length));
    }

    @Override
    public int getBytes(int index, FileChannel out, long position, int length) throws IOException {
        checkIndex(index, length);
        return out.write(view(index, length), position);
    }

    @Override
    public ByteBuf setBytes(int index, ByteBuf src, int srcIndex, int length) {
        checkSrcIndex(index, length, srcIndex, src.capacity());
        if (src.hasMemoryAddress()) {
            MemorySegment.copy(memory(), src.memoryAddress() + srcIndex, memory(), address + index, length);
        } else if (src.hasArray()) {
            setBytes(index, src.array(), src.arrayOffset() + srcIndex, length);
        } else {
            src.getBytes(srcIndex, this, index, length);
        }
        return this;
    }

    @Override
    public ByteBuf setBytes(int index, byte[] src, int srcIndex, int length) {
        checkSrcIndex(index, length, srcIndex, src.length);
        MemorySegment.copy(src, srcIndex, memory(), JAVA_BYTE, address + index, length);
        return this;
    }

    @Override
    public ByteBuf setBytes(int index, ByteBuffer src) {
        int length = src.remaining();
        checkIndex(index, length);
        memory().asSlice(address + index, length).copyFrom(MemorySegment.ofBuffer(src));
        src.position(src.position() + length);
        return this;
    }

    /** Reads at most {@code length} bytes: what one {@code read} gives, or -1 at the stream's end. */
    @Override
    public int setBytes(int index, InputStream in, int length) throws IOException {
        checkIndex(index, length);
        byte[] chunk = new byte[Math.min(length, STREAM_CHUNK)];
        int read = in.read(chunk, 0, chunk.length);
        if (read > 0) MemorySegment.copy(chunk, 0, memory(), JAVA_BYTE, address + index, read);
        return read;
    }

    @Override
    public int setBytes(int index, ScatteringByteChannel in, int length) throws IOException {
        checkIndex(index, length);
        try {
            return in.read(view(index, length));
        } catch (ClosedChannelException e) {
            return -1; // Netty's contract: the channel's end, not an error
        }
    }

    @Override
    public int setBytes(int index, FileChannel in, long position, int length) throws IOException {
        checkIndex(index, length);
        try {
            return in.read(view(index, length), position);
        } catch (ClosedChannelException e) {
            return -1;
        }
    }

    @Override
    public ByteBuf copy(int index, int length) {
        checkIndex(index, length);
        return alloc.directBuffer(length, maxCapacity()).writeBytes(this, index, length);
    }

    // ---- NIO views: what the NIO transport reads into and writes from -------------------------------------------

    /** A direct ByteBuffer over bytes [index, index + length), position 0, big-endian. Indices checked by the caller. */
    private ByteBuffer view(int index, int length) {
        return memory().asSlice(address + index, length).asByteBuffer();
    }

    @Override
    public int nioBufferCount() {
        return 1;
    }

    @Override
    public ByteBuffer nioBuffer(int index, int length) {
        checkIndex(index, length);
        return view(index, length);
    }

    @Override
    public ByteBuffer internalNioBuffer(int index, int length) {
        return nioBuffer(index, length);
    }

    @Override
    public ByteBuffer[] nioBuffers(int index, int length) {
        return new ByteBuffer[] {nioBuffer(index, length)};
    }
}
