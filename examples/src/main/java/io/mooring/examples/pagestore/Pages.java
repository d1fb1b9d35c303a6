package io.mooring.examples.pagestore;

import io.mooring.allocator.RdmaArena;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.EnumSet;
import java.util.zip.CRC32C;

/**
 * The page table of a remote page store, as it lies in the server's memory and arrives in a reader's READ: {@link
 * #COUNT} pages of {@link #BYTES}, each {@code version:u64 checksum:u64 body}, the checksum a CRC32C of the version and
 * the body. A page is written in place while peers READ it, so a READ may see half of one write and half of the next
 * (torn): its checksum fails and the reader reads again. A body is {@code seed:u64} and 1021 words derived from the
 * seed, so a reader can also check that what it took is exactly what some writer wrote.
 *
 * <p>The protocol beside the READs: a write is a call ({@code RdmaSession.callAsync}) of {@code page:u64 body}, its
 * reply {@code version:u64}, the version the page got.
 */
public final class Pages {
    public static final int COUNT = 4096;
    public static final int BYTES = 8192;
    static final long TABLE_BYTES = (long) COUNT * BYTES;
    static final int HEADER = 16;
    static final int BODY = BYTES - HEADER;
    /** A write's request: the page number and the new body. */
    static final int WRITE_REQUEST = Long.BYTES + BODY;
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED;

    private Pages() {}

    /** Fills a body at {@code at} in {@code m} from {@code seed}. */
    static void fillBody(MemorySegment m, long at, long seed) {
        m.set(WORD, at, seed);
        for (int i = 1; i < BODY / Long.BYTES; i++) m.set(WORD, at + (long) i * Long.BYTES, word(seed, i));
    }

    /** Whether the body at {@code at} in {@code m} is the one its seed makes. */
    static boolean bodyIsWhole(MemorySegment m, long at) {
        long seed = m.get(WORD, at);
        for (int i = 1; i < BODY / Long.BYTES; i++) {
            if (m.get(WORD, at + (long) i * Long.BYTES) != word(seed, i)) return false;
        }
        return true;
    }

    private static long word(long seed, int i) {
        return (seed + i) * 0x9E3779B97F4A7C15L ^ i;
    }

    static long version(MemorySegment page) {
        return page.get(WORD, 0);
    }

    static long seed(MemorySegment page) {
        return page.get(WORD, HEADER);
    }

    /** The checksum a page at {@code at} in {@code m} should carry: of its version and its body. */
    static long checksum(MemorySegment m, long at) {
        var crc = new CRC32C();
        crc.update(m.asSlice(at, Long.BYTES).asByteBuffer());
        crc.update(m.asSlice(at + HEADER, BODY).asByteBuffer());
        return crc.getValue();
    }

    /** Whether the page at {@code at} in {@code m} carries the checksum of its contents (else a READ tore it). */
    static boolean checksumHolds(MemorySegment m, long at) {
        return m.get(WORD, at + Long.BYTES) == checksum(m, at);
    }

    /** Stamps the page at {@code at} with {@code version} and the checksum that goes with its body. */
    static void stamp(MemorySegment m, long at, long version) {
        m.set(WORD, at, version);
        m.set(WORD, at + Long.BYTES, checksum(m, at));
    }

    /** A device, its protection domain and an arena whose blocks a peer may reach through windows. */
    record Memory(DeviceContext device, ProtectionDomain pd, RdmaArena arena) implements AutoCloseable {
        static Memory open(String device) {
            DeviceContext context = RdmaDevices.open(device);
            ProtectionDomain pd = context.allocateProtectionDomain();
            return new Memory(context, pd, RdmaArena.builder(pd).access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND))
                    .build());
        }

        @Override
        public void close() {
            arena.close();
            pd.close();
            device.close();
        }
    }
}
