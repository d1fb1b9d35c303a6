package io.mooring.examples.log;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.allocator.RdmaArena;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.testing.CapturedLog;
import io.mooring.testing.ThreadDump;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The log's promises: records appended by several writers at once — each on its own session, reserving room with a
 * remote fetch-and-add — all land intact and none overlaps another; the one writer that finds the log full first seals
 * it; a writer that outlives its lease's first term renews it; writers that leave without their count (before or after
 * taking the log) hold up neither the others nor the report; nothing is left in either arena.
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
        // Short, so that writers renew within the test; a writer renews at half the term, so one append that took
        // longer than that would find its lease expired: 250 ms did, twice, on a host at a load of 10 and more.
        Duration lease = Duration.ofSeconds(1);
        int size = 1 << 20;
        int payload = 200;
        withServerAndWriters((server, listener, writers) -> {
            var report = serve(server, listener, 3, size, lease);
            long started = System.nanoTime();
            List<LogWriter.Result> results = write(writers, listener, 3, payload, lease, report);
            long took = System.nanoTime() - started;
            var landed = ThreadDump.awaitOrDump(report, Duration.ofSeconds(30), "the log server's report");

            long appended = results.stream().mapToLong(LogWriter.Result::appended).sum();
            assertFilled(size, payload, appended, landed);
            assertEquals(1, results.stream().filter(LogWriter.Result::sealed).count(), "one writer sealed the log");
            int renewals = results.stream().mapToInt(LogWriter.Result::renewals).sum();
            if (took > lease.toNanos()) assertTrue(renewals > 0, "writers ran past one term and renewed");
            System.out.println(appended + " records in " + took / 1_000_000 + " ms, " + renewals + " renewals");
        });
    }

    @Test
    void writersThatLeaveWithoutTheirCountHoldNothingUp() throws Exception {
        Duration lease = Duration.ofSeconds(5);
        int size = 1 << 16;
        int payload = 200;
        withServerAndWriters((server, listener, writers) -> {
            var report = serve(server, listener, 3, size, lease);
            writers.connectAsync(listener.address()).get(10, TimeUnit.SECONDS).close(); // before or after its offer
            try (RdmaSession quitter = writers.connectAsync(listener.address()).get(10, TimeUnit.SECONDS)) {
                quitter.receiveOffer(Duration.ofSeconds(10)).close(); // after its offer
            }
            List<LogWriter.Result> results = write(writers, listener, 1, payload, lease, report);
            var landed = ThreadDump.awaitOrDump(report, Duration.ofSeconds(10), "the log server's report");

            assertFilled(size, payload, results.getFirst().appended(), landed);
        });
    }

    /** What a test does with a log server's endpoint, its listener, and the writers' endpoint. */
    private interface Scenario {
        void run(RdmaEndpoint server, RdmaListener listener, RdmaEndpoint writers) throws Exception;
    }

    /** Runs {@code scenario} on two soft devices, then checks that nothing is left in either arena. */
    private static void withServerAndWriters(Scenario scenario) throws Exception {
        try (var serverMemory = Memory.open(); var writerMemory = Memory.open()) {
            try (var server = RdmaEndpoint.builder(serverMemory.pd(), serverMemory.arena()).build();
                 RdmaListener listener = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                 var writers = RdmaEndpoint.builder(writerMemory.pd(), writerMemory.arena()).build()) {
                scenario.run(server, listener, writers);
            }
            serverMemory.arena().flushThreadCaches();
            writerMemory.arena().flushThreadCaches();
            assertEquals(0, serverMemory.arena().stats().liveBlocks(), "the log returned");
            assertEquals(0, writerMemory.arena().stats().liveBlocks() - writerMemory.arena().stats().uncollectedFrees(),
                    "the writers' records returned");
        }
    }

    /** Runs {@link LogServer#serve} on a virtual thread. */
    private static CompletableFuture<LogServer.Report> serve(RdmaEndpoint server, RdmaListener listener, int writers,
                                                             int size, Duration lease) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return LogServer.serve(server, listener, writers, size, lease);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }, r -> Thread.ofVirtual().start(r));
    }

    /** Runs {@code n} writers on sessions to the listener, failing with the server's failure if it ended them. */
    private static List<LogWriter.Result> write(RdmaEndpoint writers, RdmaListener listener, int n, int payload,
                                                Duration lease, CompletableFuture<LogServer.Report> report)
            throws Exception {
        try (RdmaSession first = writers.connectAsync(listener.address()).get(10, TimeUnit.SECONDS)) {
            return LogWriter.run(first, n, payload, lease);
        } catch (Exception e) { // the server's failure, if it ended the sessions, says why
            report.exceptionally(serverFailure -> {
                e.addSuppressed(serverFailure);
                return null;
            }).get(30, TimeUnit.SECONDS);
            throw e;
        }
    }

    /** The log filled with {@code appended} records, all of which landed intact, and was sealed. */
    private static void assertFilled(int size, int payload, long appended, LogServer.Report landed) {
        int record = (LogServer.HEADER + payload + 7) & -8;
        assertEquals((size - LogServer.START) / record, appended, "the log filled: no room lost or shared");
        assertEquals(appended, landed.records(), "every record the writers appended landed");
        assertEquals(appended * payload, landed.bytes());
        assertEquals(0, landed.damaged(), "no record overwritten by another writer's");
        assertTrue(landed.sealed(), "the seal is in the log");
    }
}
