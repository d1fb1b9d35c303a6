package io.mooring.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.internal.KernelPage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link NativeMemory#map}: aligned as asked, and every byte of the range in a mapping of its own. */
class NativeMemoryTest {
    private record Range(long start, long end) {}

    @Test
    void everyPageOfAnAlignedMappingIsNewlyMapped() throws IOException {
        long page = KernelPage.SIZE;
        for (long alignment : new long[] {SizeClasses.PAGE_SIZE, 1 << 20}) {
            for (int i = 0; i < 32; i++) {
                long size = 3L * SizeClasses.PAGE_SIZE;
                // A one-page mapping first, so that mmap's next address changes parity from one round to the next.
                long spacer = NativeMemory.map(page, page, false);
                List<Range> before = mappings();
                long address = NativeMemory.map(size, alignment, false);
                List<Range> after = mappings();
                try {
                    assertEquals(0, address % alignment, "aligned to " + alignment);
                    for (long p = address; p < address + size; p += page) {
                        // Mapped now and not before: a page that was not ours would be unmapped by our release.
                        assertTrue(covered(after, p) && !covered(before, p), "page 0x" + Long.toHexString(p)
                                + " of the mapping at 0x" + Long.toHexString(address) + " (" + size + " bytes, aligned to "
                                + alignment + ") is not newly mapped");
                    }
                } finally {
                    NativeMemory.unmap(address, size);
                    NativeMemory.unmap(spacer, page);
                }
            }
        }
    }

    private static boolean covered(List<Range> ranges, long address) {
        return ranges.stream().anyMatch(r -> r.start <= address && address < r.end);
    }

    private static List<Range> mappings() throws IOException {
        return Files.readAllLines(Path.of("/proc/self/maps")).stream().map(line -> {
            String[] bounds = line.substring(0, line.indexOf(' ')).split("-");
            return new Range(Long.parseUnsignedLong(bounds[0], 16), Long.parseUnsignedLong(bounds[1], 16));
        }).toList();
    }
}
