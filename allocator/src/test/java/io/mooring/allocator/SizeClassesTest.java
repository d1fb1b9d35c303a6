package io.mooring.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SizeClassesTest {

    @Test
    void everyRequestGetsTheSmallestClassThatHoldsIt() {
        for (long size = 1; size <= 1 << 20; size++) {
            int i = SizeClasses.indexOf(size);
            assertTrue(SizeClasses.size(i) >= size, "class too small");
            if (i > 0) assertTrue(SizeClasses.size(i - 1) < size, "a smaller class would hold " + size);
        }
    }

    @Test
    void roundingWastesAtMostAQuarterAbove64Bytes() {
        for (long size = 65; size <= 1 << 24; size += 7) {
            long c = SizeClasses.size(SizeClasses.indexOf(size));
            assertTrue(c - size <= size / 4, "class " + c + " for " + size);
        }
    }

    @Test
    void theTableInTheClassCommentHolds() {
        long[] sizes = {16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512};
        for (int i = 0; i < sizes.length; i++) assertEquals(sizes[i], SizeClasses.size(i));
        assertEquals(16 << 10, SizeClasses.size(35));
        assertEquals(32 << 10, SizeClasses.size(39));
        assertEquals(64 << 10, SizeClasses.size(43));
        assertEquals(36, SizeClasses.SMALL_CLASSES);
    }

    @Test
    void slabsWasteLittleAndHoldAtLeastTwoRegions() {
        for (int i = 0; i < SizeClasses.SMALL_CLASSES; i++) {
            long bytes = (long) SizeClasses.slabPages(i) * SizeClasses.PAGE_SIZE;
            long region = SizeClasses.size(i);
            assertTrue(bytes / region >= 2, "class " + region);
            assertTrue(bytes % region <= bytes / 16, "class " + region + " wastes " + bytes % region + " of " + bytes);
        }
    }

    @Test
    void largeSizesAreWholePages() {
        assertEquals(24 << 10, SizeClasses.largeSize(16385 + 4096));
        assertEquals(40 << 10, SizeClasses.largeSize(33 << 10));
    }
}
