package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.verbs.values.Access;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Issue 26, finding 7: thousands of peers that connect, leave lease requests in flight and drop the connection without
 * a goodbye leave nothing behind — heap after GC, blocks, threads and resources back within a small constant of the
 * start. {@code -Dmooring.lease.cycles=N} (default 2,000) and {@code -Dmooring.lease.verbose=true} prints the figures.
 */
@Timeout(600)
class DisconnectCycleTest extends EndpointPeers {
    private static final int CYCLES = Integer.getInteger("mooring.lease.cycles", 2_000);
    private static final int REQUESTS = 4;

    @Test
    void abruptDisconnectsWithRequestsInFlightLeaveNothingBehind() throws Exception {
        // A dropped peer's session ends once the owner notices; on a loaded host more than the default 64 sessions of
        // one address were still ending and the next connect was refused (PEER_FULL). The cap is CrowdDefaultsTest's.
        RdmaListener listener = listen(RdmaEndpoint.builder(ownerPd, ownerArena).failureBackoff(Duration.ZERO)
                .maxSessionsPerPeer(CYCLES));
        for (int i = 0; i < 50; i++) cycle(listener, i); // warms up what the first sessions make once
        awaitTrue(() -> ownerEndpoint.sessions().isEmpty(), "the warm-up sessions to end");
        long heap = usedHeapAfterGc();
        long blocks = blocksHeld(); // besides the shared receives, which the endpoint keeps for its next sessions
        long resources = sessionResources();
        int threads = Thread.activeCount();
        long start = System.nanoTime();
        for (int i = 0; i < CYCLES; i++) cycle(listener, i);
        awaitTrue(() -> ownerEndpoint.sessions().isEmpty() && ownerEndpoint.sessionCount() == 0,
                "every dropped session to end");
        awaitTrue(() -> blocksHeld() == blocks, "every block to return, " + blocks + " held at the start");
        long grown = usedHeapAfterGc() - heap;
        if (Boolean.getBoolean("mooring.lease.verbose")) {
            System.out.printf("%d cycles in %.1f s: heap after GC %+d KiB (%d B/cycle), blocks %d -> %d, threads %d -> %d,"
                            + " resources %d -> %d%n", CYCLES, (System.nanoTime() - start) / 1e9, grown / 1024,
                    grown / CYCLES, blocks, blocksHeld(), threads, Thread.activeCount(), resources,
                    sessionResources());
        }
        assertEquals(resources, sessionResources(), graph::dump);
        assertTrue(Thread.activeCount() <= threads + 4, "threads: " + threads + " then " + Thread.activeCount());
        assertTrue(grown < 16 << 20, "the heap after GC grew by " + (grown >> 10) + " KiB in " + CYCLES + " cycles");
    }

    /** A raw peer connects, asks for {@value #REQUESTS} leases, drops everything before the answers come. */
    private void cycle(RdmaListener listener, int i) throws Exception {
        var accepted = listener.acceptAsync();
        try (RawPeer peer = new RawPeer(peerPd, listener.address())) {
            accepted.get(10, TimeUnit.SECONDS);
            for (int r = 1; r <= REQUESTS; r++) {
                peer.send(new Message.Request(r, 4096, 8, Access.mask(RW), Duration.ofSeconds(30).toNanos()));
            }
        }
    }

    /**
     * Live resources besides the arenas' chunks (each its memory and its registration), which stay for the next
     * sessions: how many a run adds depends on how many sessions overlapped, not on what they left behind.
     */
    private long sessionResources() {
        return graph.liveCount() - 2 * (ownerArena.stats().chunks() + peerArena.stats().chunks());
    }

    private long blocksHeld() {
        return ownerArena.stats().liveBlocks() - ownerEndpoint.receives().posted();
    }

    private static long usedHeapAfterGc() throws InterruptedException {
        Runtime runtime = Runtime.getRuntime();
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 3; i++) { // the least of a few: a collection may leave floating garbage behind
            System.gc();
            Thread.sleep(50);
            used = Math.min(used, runtime.totalMemory() - runtime.freeMemory());
        }
        return used;
    }
}
