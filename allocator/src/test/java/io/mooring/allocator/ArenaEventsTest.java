package io.mooring.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The JFR events an arena emits while a recording runs: chunk registrations, releases and purges. */
class ArenaEventsTest {
    private final ArenaFixture fx = new ArenaFixture();

    @AfterEach
    void teardown() {
        fx.close();
    }

    @Test
    void chunksAndPurgesAreRecorded() throws Exception {
        Path file = Files.createTempFile("mooring-arena", ".jfr");
        try (Recording recording = new Recording()) {
            recording.enable("io.mooring.Chunk").withThreshold(Duration.ZERO);
            recording.enable("io.mooring.Purge").withThreshold(Duration.ZERO);
            recording.start();
            try (RdmaArena arena = fx.arena().name("recorded").build()) {
                arena.allocate(64).close();
                arena.flushThreadCaches();
                arena.purge();
            }
            recording.stop();
            recording.dump(file);
            List<RecordedEvent> events = RecordingFile.readAllEvents(file).stream()
                    .filter(e -> e.getEventType().getName().startsWith("io.mooring.")).toList();
            List<String> chunks = events.stream().filter(e -> e.getEventType().getName().equals("io.mooring.Chunk"))
                    .map(e -> e.getString("arena") + " " + e.getString("action") + " " + e.getLong("size")).toList();
            assertEquals(List.of("recorded register 1048576", "recorded release 1048576"), chunks);
            RecordedEvent purge = events.stream().filter(e -> e.getEventType().getName().equals("io.mooring.Purge"))
                    .findFirst().orElseThrow(() -> new AssertionError("no purge event in " + events));
            assertEquals(1, purge.getInt("chunks"));
            assertEquals(1 << 20, purge.getLong("bytes"));
        } finally {
            Files.deleteIfExists(file);
        }
    }
}
