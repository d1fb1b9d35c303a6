package io.mooring.examples.log;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.RdmaArena;
import io.mooring.verbs.Access;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import java.util.EnumSet;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.testing.CapturedLog;
import io.mooring.testing.ThreadDump;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The log's promises: records appended by several writers at once — each on its own session, reserving room with a
 * remote fetch-and-add — all land intact and none overlaps another; the one writer that finds the log full first seals
 * it; a writer that outlives its lease's first term renews it; nothing is left in either arena.
 */
class LogTest {
    @RegisterExtension
    final CapturedLog log = new CapturedLog("io.mooring.lease");

    /** A soft device, its protection domain, and an arena whose blocks may be leased through windows. */
    private record Memory(DeviceContext device, ProtectionDomain pd, RdmaArena arena) implements AutoCloseable {
        static Memory open() {
            DeviceContext device = RdmaDevices.open("soft:soft0");
            ProtectionDomain pd = device.allocateProtectionDomain();
            var access = EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND);
            return new Memory(device, pd, RdmaArena.builder(pd).access(access).build());
        }

        @Override
        public void close() {
            arena.close();
            pd.close();
            device.close();
        }
    }

    @Test
    void writersOnTheirOwnSessionsAppendUntilOneSealsTheLog() throws Exception {
        Duration lease = Duration.ofMillis(500);
        int size = 1 << 20;
        int payload = 200;
        try (var serverMemory = Memory.open(); var writerMemory = Memory.open()) {
            try (var server = RdmaEndpoint.builder(serverMemory.pd(), serverMemory.arena()).build();
                 RdmaListener listener = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                 var writers = RdmaEndpoint.builder(writerMemory.pd(), writerMemory.arena()).build()) {
                var report = CompletableFuture.supplyAsync(() -> {
                    try {
                        return LogServer.serve(server, listener, 3, size, lease);
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                }, r -> Thread.ofVirtual().start(r));
                List<LogWriter.Result> results;
                long started = System.nanoTime();
                try (RdmaSession first = writers.connect(listener.address()).get(10, TimeUnit.SECONDS)) {
                    results = LogWriter.run(first, 3, payload, lease);
                } catch (Exception e) { // the server's failure, if it ended the sessions, says why
                    report.exceptionally(serverFailure -> {
                        e.addSuppressed(serverFailure);
                        return null;
                    }).get(30, TimeUnit.SECONDS);
                    throw e;
                }
                long took = System.nanoTime() - started;
                var landed = ThreadDump.awaitOrDump(report, Duration.ofSeconds(30), "the log server's report");

                long appended = results.stream().mapToLong(LogWriter.Result::appended).sum();
                int record = (LogServer.HEADER + payload + 7) & -8;
                assertEquals((size - LogServer.START) / record, appended, "the log filled: no room lost or shared");
                assertEquals(appended, landed.records(), "every record the writers appended landed");
                assertEquals(appended * payload, landed.bytes());
                assertEquals(0, landed.damaged(), "no record overwritten by another writer's");
                assertEquals(1, results.stream().filter(LogWriter.Result::sealed).count(), "one writer sealed the log");
                assertTrue(landed.sealed(), "the seal is in the log");
                int renewals = results.stream().mapToInt(LogWriter.Result::renewals).sum();
                if (took > lease.toNanos()) assertTrue(renewals > 0, "writers ran past one term and renewed");
                System.out.println(appended + " records in " + took / 1_000_000 + " ms, " + renewals + " renewals");
            }
            serverMemory.arena().flushThreadCaches();
            writerMemory.arena().flushThreadCaches();
            assertEquals(0, serverMemory.arena().stats().liveBlocks(), "the log returned");
            assertEquals(0, writerMemory.arena().stats().liveBlocks() - writerMemory.arena().stats().uncollectedFrees(),
                    "the writers' records returned");
        }
    }
}
