package io.mooring.chronicle;

import io.mooring.allocator.Block;
import io.mooring.lifecycle.ResourceClosedException;
import java.lang.foreign.MemorySegment;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.BytesStore;
import net.openhft.chronicle.bytes.VanillaBytes;
import net.openhft.chronicle.core.io.ReferenceOwner;

/**
 * Chronicle Bytes views of a {@link Block}, so an engine that encodes its records with Chronicle writes them
 * straight into registered memory and posts the block without a copy:
 * <pre>{@code
 * try (Block block = arena.allocate(4096)) {
 *     Bytes<Void> out = ChronicleBlocks.bytes(block);
 *     out.writeLong(id).writeUtf8(name);
 *     qp.post(WorkRequest.send(block.region(), block.address() - block.region().address(), (int) out.writePosition()));
 *     out.releaseLast();
 * }
 * }</pre>
 *
 * <p>Bounds are checked: both views span exactly the block's {@link Block#size()}, and a read or write past it
 * fails with Chronicle's own {@code DecoratedBufferOverflowException} (or {@code ...UnderflowException}) before
 * any byte outside the block is touched; a limit cannot be raised past the block either. Chronicle's raw store
 * ({@code BytesStore.wrap(address, size)}) checks nothing on absolute access, so it is never handed out here;
 * only Chronicle's explicit escape hatch {@code bytesStore()} of a view reaches it.
 *
 * <p>Lifetime is not checked: Chronicle addresses the memory by raw address, outside the block's segment scope.
 * Use a view only while its block is open, and release it ({@code releaseLast()}, which frees nothing) before
 * closing the block; a view used after the block was closed reads and writes memory handed to someone else.
 * A view is taken on a thread that may access the block (a checked block is confined to its allocating thread);
 * after that only Chronicle's own single-thread check, which runs with assertions enabled, keeps it there.
 *
 * <p>Chronicle needs JVM flags on JDK 25 (see this module's pom); Mooring's core modules do not.
 */
public final class ChronicleBlocks {
    private ChronicleBlocks() {}

    /**
     * A {@code Bytes} for writing records into the block from its start: write position 0, write limit the block's
     * size. Reading back what was written works as with any {@code Bytes}; to read what the block already holds,
     * set the write position (Chronicle's read limit) to the number of bytes there.
     *
     * @throws ResourceClosedException if the block is closed
     * @throws WrongThreadException  if the block is confined to another thread
     */
    public static Bytes<Void> bytes(Block block) {
        BytesStore<?, Void> raw = raw(block);
        Bytes<Void> bytes = VanillaBytes.wrap(raw);
        raw.release(ReferenceOwner.INIT); // the view holds the store now; releasing the view releases both
        return bytes;
    }

    /**
     * A store over the whole block for absolute access ({@code readLong(offset)}, {@code writeLong(offset, v)},
     * ...), every access checked against the block's size. It is a {@code Bytes} whose read and write limits are
     * the block's size, seen as a store; its {@code bytesForRead()} and {@code bytesForWrite()} are bounded too.
     *
     * @throws ResourceClosedException if the block is closed
     * @throws WrongThreadException  if the block is confined to another thread
     */
    public static BytesStore<?, Void> bytesStore(Block block) {
        BytesStore<?, Void> raw = raw(block);
        Bytes<Void> bounded = raw.bytesForRead();
        raw.release(ReferenceOwner.INIT);
        return bounded;
    }

    /** Chronicle's unchecked store at the block's address and size, after the checks the block's segment makes. */
    private static BytesStore<?, Void> raw(Block block) {
        MemorySegment segment = block.segment();
        if (!segment.isAccessibleBy(Thread.currentThread())) {
            throw new WrongThreadException(block + " is confined to the thread that allocated it; take the view there"
                    + " (or allocate it with RdmaArena.allocateShared)");
        }
        return BytesStore.wrap(segment.address(), segment.byteSize());
    }
}
