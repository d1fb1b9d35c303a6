package io.mooring.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ClosePolicy;
import io.mooring.lifecycle.ResourceBusyException;
import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.QpCapabilities;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.EnumSet;
import org.junit.jupiter.api.Test;

/** Blocks are what work requests post: a WRITE from one arena's block into another's, by region and offset. */
class BlockRdmaTest {

    @Test
    void aBlockIsWrittenRemotelyThroughItsRegion() throws Exception {
        try (var fx = new ArenaFixture()) {
            CompletionQueue cq = fx.context.createCompletionQueue(16);
            QueuePair a = fx.pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
            QueuePair b = fx.pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
            a.connect(b.info());
            b.connect(a.info());
            try (RdmaArena local = fx.arena().build();
                 RdmaArena exposed = fx.arena().access(EnumSet.of(Access.LOCAL_WRITE, Access.REMOTE_WRITE)).build();
                 Block src = local.allocate(256);
                 Block dst = exposed.allocate(256)) {
                src.segment().fill((byte) 0x5c);
                a.post(WorkRequest.write(src.region(), src.regionOffset(), 256)
                        .remote(dst.address(), dst.rkey()));
                WorkCompletion[] wc = {new WorkCompletion()};
                assertEquals(1, cq.poll(wc, Duration.ofSeconds(10)));
                assertEquals(WcStatus.SUCCESS, wc[0].status(), wc[0]::toString);
                assertEquals(-1, src.segment().mismatch(dst.segment()));
                assertEquals((byte) 0x5c, dst.segment().get(ValueLayout.JAVA_BYTE, 255));
            }
        }
    }

    /**
     * A chunk released while a posted request still names its region (here receives, posted into blocks closed too
     * early) is deregistered and unmapped when the request completes, under STRICT as under DEFERRED: a pin is a
     * temporary hold under either policy. Under STRICT the release closed the mapping while its region, deferred,
     * was still its child, which threw out of the huge block's close and out of the arena's close and left the
     * mapping and the arena open for good. The arena's close now refuses, as STRICT does for any parent whose child
     * waits for its pins, and succeeds once the requests completed.
     */
    @Test
    void underStrictAChunkAPostedRequestHoldsIsReleasedWhenTheRequestCompletes() throws Exception {
        try (var fx = new ArenaFixture(ClosePolicy.STRICT)) {
            CompletionQueue cq = fx.context.createCompletionQueue(16);
            QueuePair a = fx.pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
            QueuePair b = fx.pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
            a.connect(b.info());
            b.connect(a.info());
            RdmaArena arena = fx.arena().build();
            Block huge = arena.allocate(600 << 10); // a chunk of its own, released with the block
            b.post(ReceiveRequest.into(huge.region(), huge.regionOffset(), 4096));
            huge.close();
            Block small = arena.allocate(256);
            b.post(ReceiveRequest.into(small.region(), small.regionOffset(), 256));
            small.close();
            assertEquals(0, arena.stats().liveBlocks());
            assertThrows(ResourceBusyException.class, arena::close, "its chunk waits for the posted receive");
            assertTrue(arena.resource().isOpen());

            b.moveToError(); // both receives complete, flushed
            WorkCompletion[] wc = {new WorkCompletion(), new WorkCompletion()};
            for (int n = 0; n < 2; ) n += cq.poll(wc, Duration.ofSeconds(10));
            assertEquals(WcStatus.WR_FLUSH_ERR, wc[0].status(), wc[0]::toString);
            arena.close();
            assertFalse(arena.resource().isOpen());
            assertEquals(0, arena.stats().chunks());
            assertFalse(fx.graph.dump().contains("chunk-memory"), fx.graph::dump);
            a.close();
            b.close();
            cq.close();
        }
    }
}
