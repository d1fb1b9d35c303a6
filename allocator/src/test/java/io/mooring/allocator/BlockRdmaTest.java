package io.mooring.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mooring.verbs.Access;
import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.QpCapabilities;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkRequest;
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
}
