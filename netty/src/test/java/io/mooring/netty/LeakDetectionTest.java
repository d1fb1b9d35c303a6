package io.mooring.netty;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.testing.CapturedLog;
import io.netty.buffer.ByteBuf;
import io.netty.util.ResourceLeakDetector;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Netty's leak detector reports a Mooring buffer dropped unreleased, with where it was allocated. */
class LeakDetectionTest {
    @RegisterExtension
    final CapturedLog log = new CapturedLog("io.netty.util.ResourceLeakDetector");
    private final BufferFixture f = new BufferFixture();
    private final ResourceLeakDetector.Level level = ResourceLeakDetector.getLevel();

    @AfterEach
    void close() throws InterruptedException {
        ResourceLeakDetector.setLevel(level);
        f.arena.close(); // the leaked block stays live: the graph's DEFERRED close lets it go with the graph
        f.graph.close();
    }

    @Test
    void aBufferDroppedUnreleasedIsReportedWithItsAllocationSite() throws InterruptedException {
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.PARANOID); // track every buffer
        leakOne();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (log.entries().stream().noneMatch(e -> isReportOfLeakOne(e.message()))) {
            if (System.nanoTime() > deadline) throw new AssertionError("no leak reported within 30 s: " + log.entries());
            System.gc();
            Thread.sleep(10);
            f.allocator.directBuffer(8).release(); // the detector reports collected leaks when it tracks the next one
        }
        String report = log.entries().stream().map(CapturedLog.Entry::message).filter(this::isReportOfLeakOne)
                .findFirst().orElseThrow();
        assertTrue(report.contains("MooringByteBufAllocator.newDirectBuffer"), report);
        assertTrue(report.contains("dropped here"), "the last touch's hint:\n" + report);
    }

    /** A leak report whose allocation site is {@link #leakOne} (another test's leftovers may be reported too). */
    private boolean isReportOfLeakOne(String message) {
        return message.contains("LEAK") && message.contains("LeakDetectionTest.leakOne");
    }

    private void leakOne() {
        ByteBuf buf = f.allocator.directBuffer(64).writeLong(1);
        buf.touch("dropped here");
    }
}
