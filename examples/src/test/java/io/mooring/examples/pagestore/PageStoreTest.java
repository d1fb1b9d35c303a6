package io.mooring.examples.pagestore;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lease.RdmaSession;
import io.mooring.testing.CapturedLog;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The page store, small and in one process: a crowd of readers and writers, every page it delivers checked. */
class PageStoreTest {
    /** The sessions' INFO lines (clients leaving) are expected; kept out of the build output. */
    @RegisterExtension
    final CapturedLog log = new CapturedLog(RdmaSession.class.getPackageName());

    @Test
    void aCrowdOverTwoSessionsReadsOnlyWholeCurrentPagesAndWritesByCall() throws Exception {
        List<String> lines = PageStore.inProcess("soft:soft0", 2, 16, 200, 2_000, 30);
        String text = String.join("\n", lines);
        assertTrue(text.matches("(?s)client: 16 tasks over 2 session\\(s\\): \\d+ READs and \\d+ writes in .*"), text);
        assertTrue(text.contains("delivered: 0 stale, 0 wrong"), text);
        assertTrue(text.matches("(?s).*read p50 [0-9.]+ µs p99 [0-9.]+ µs, write p50 [0-9.]+ µs.*"), text);
    }

    /** The checks the client relies on catch what they are for: a torn page fails its checksum, a mixed body its seed. */
    @Test
    void aTornPageFailsItsChecksumAndAMixedBodyItsSeed() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment page = arena.allocate(Pages.BYTES, 8);
            Pages.fillBody(page, Pages.HEADER, 11);
            Pages.stamp(page, 0, 3);
            assertTrue(Pages.checksumHolds(page, 0));
            assertTrue(Pages.bodyIsWhole(page, Pages.HEADER));
            MemorySegment next = arena.allocate(Pages.BYTES, 8);
            Pages.fillBody(next, Pages.HEADER, 12);
            MemorySegment.copy(next, Pages.BYTES / 2, page, Pages.BYTES / 2, Pages.BYTES / 2); // half of the next write
            assertFalse(Pages.checksumHolds(page, 0));
            assertFalse(Pages.bodyIsWhole(page, Pages.HEADER));
        }
    }
}
