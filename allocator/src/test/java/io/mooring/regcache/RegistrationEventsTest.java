package io.mooring.regcache;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mooring.allocator.internal.KernelPage;
import io.mooring.lifecycle.ClosePolicy;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;

/** The JFR events a registration cache emits while a recording runs: its slow paths, never a hit. */
class RegistrationEventsTest {
    @Test
    void missesMergesEvictionsAndInvalidationsAreRecorded() throws Exception {
        long page = KernelPage.SIZE;
        Path file = Files.createTempFile("mooring-regcache", ".jfr");
        try (PdFixture fx = new PdFixture(ClosePolicy.DEFERRED);
             Arena memory = Arena.ofShared();
             Recording recording = new Recording()) {
            recording.enable("io.mooring.Registration").withThreshold(Duration.ZERO);
            recording.start();
            MemorySegment buf = memory.allocate(4 * page, page);
            try (RegistrationCache cache = RegistrationCache.builder(fx.pd).name("recorded").maxCachedCount(1)
                    .eviction(EvictionPolicy.LEAST_RECENTLY_USED).build()) { // evicts as the release returns
                cache.acquire(buf.asSlice(0, page)).close();          // register [0, 1)
                cache.acquire(buf.asSlice(0, 10)).close();            // a hit: no event
                cache.acquire(buf.asSlice(0, 2 * page)).close();      // register [0, 2), merging [0, 1)
                cache.acquire(buf.asSlice(3 * page, page)).close();   // register [3, 4); the count bound evicts [0, 2)
                cache.invalidate(buf.asSlice(3 * page, 1));           // invalidate [3, 4)
            }
            recording.stop();
            recording.dump(file);
            List<String> events = RecordingFile.readAllEvents(file).stream()
                    .filter(e -> e.getEventType().getName().equals("io.mooring.Registration"))
                    .map(e -> e.getString("cache") + " " + e.getString("action") + " "
                            + (e.getLong("address") - buf.address()) / page + "+" + e.getLong("size") / page
                            + " merged " + e.getInt("merged"))
                    .toList();
            assertEquals(List.of("recorded register 0+1 merged 0", "recorded register 0+2 merged 1",
                    "recorded register 3+1 merged 0", "recorded evict 0+2 merged 0",
                    "recorded invalidate 3+1 merged 0"), events);
        } finally {
            Files.deleteIfExists(file);
        }
    }
}
