package io.mooring.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.testing.CapturedLog;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class DestroyFailureTest {
    @RegisterExtension
    final CapturedLog captured = new CapturedLog(ResourceGraph.class.getPackageName());
    private final DestroyLog log = new DestroyLog();
    private final ResourceGraph graph = ResourceGraph.create();

    @Test
    void aFailedDestroyIsReportedAndKeepsTheParentAlive() {
        Resource pd = graph.create("pd", "", log.action("pd"));
        Resource mr = pd.createChild("mr", "len=64", log.failing("mr", 1));
        pd.close();

        var e = assertThrows(DestroyFailedException.class, mr::close);
        assertTrue(e.getMessage().contains("destroy of mr#" + mr.id() + " (len=64) failed"), e.getMessage());
        assertTrue(e.getCause().getMessage().contains("EBUSY"));
        assertEquals(ResourceState.FAILED, mr.state());
        assertEquals(ResourceState.CLOSING, pd.state(), "not destroyed on top of a failed child");
        assertTrue(log.order().isEmpty());
        assertEquals(List.of(mr.id()), graph.failures().stream().map(f -> f.resource().id()).toList());
        assertTrue(graph.dump().contains("mr#" + mr.id() + " (len=64) FAILED"), graph.dump());
        assertEquals(2, graph.liveCount(), "nothing silently leaked: both are still accounted for");
        var report = captured.entries().stream().filter(r -> r.level() == System.Logger.Level.ERROR)
                .findFirst().orElseThrow();
        assertTrue(report.message().startsWith("destroy of mr#" + mr.id() + " (len=64) failed: "
                + e.getCause()), report.message());
        assertEquals(e.getCause(), report.thrown());
    }

    @Test
    void retryDestroysAndReleasesTheParent() {
        Resource pd = graph.create("pd", "", log.action("pd"));
        Resource mr = pd.createChild("mr", "", log.failing("mr", 2));
        pd.close();
        assertThrows(DestroyFailedException.class, mr::close);

        DestroyFailure failure = graph.failures().getFirst();
        assertThrows(DestroyFailedException.class, failure::retry);
        assertEquals(ResourceState.FAILED, mr.state());
        graph.failures().getFirst().retry();
        assertEquals(List.of("mr", "pd"), log.order());
        assertEquals(List.of(), graph.failures());
        var stale = assertThrows(IllegalStateException.class, failure::retry);
        assertTrue(stale.getMessage().contains("it is destroyed, not failed"), stale.getMessage());
    }

    @Test
    void abandoningForcesTheParentsDestroy() {
        Resource pd = graph.create("pd", "", log.action("pd"));
        Resource mr = pd.createChild("mr", "", log.failing("mr", Integer.MAX_VALUE));
        pd.close();
        var e = assertThrows(DestroyFailedException.class, mr::close);

        e.failures().getFirst().abandon();
        assertEquals(ResourceState.ABANDONED, mr.state());
        assertEquals(List.of("pd"), log.order());
        assertEquals(0, graph.liveCount());
    }

    @Test
    void aParentsFailureTriggeredByTheLastChildIsReportedToItsCloser() {
        Resource pd = graph.create("pd", "", log.failing("pd", 1));
        Resource mr = pd.createChild("mr", "", log.action("mr"));
        pd.close();
        var e = assertThrows(DestroyFailedException.class, mr::close);
        assertEquals(ResourceState.DESTROYED, mr.state());
        assertEquals(pd.id(), e.failures().getFirst().resource().id());
        assertEquals(ResourceState.FAILED, pd.state());
    }

    @Test
    void aFailureOnTheUnpinPathDoesNotThrowButIsRecorded() {
        Resource mr = graph.create("mr", "", log.failing("mr", 1));
        Pin pin = mr.pin();
        mr.close();
        pin.close(); // the data path never throws for a destroy it triggered
        assertEquals(ResourceState.FAILED, mr.state());
        assertEquals(1, graph.failures().size());
    }

    @Test
    void closeTreeReportsEveryFailureAndStillClosesTheRest() {
        Resource ctx = graph.create("ctx", "", log.action("ctx"));
        Resource a = ctx.createChild("a", "", log.failing("a", 1));
        Resource b = ctx.createChild("b", "", log.failing("b", 1));
        Resource c = ctx.createChild("c", "", log.action("c"));

        var e = assertThrows(DestroyFailedException.class, ctx::closeTree);
        assertEquals(2, e.failures().size());
        assertEquals(1, e.getSuppressed().length);
        assertEquals(List.of("c"), log.order());
        assertTrue(List.of(ctx, a, b, c).stream().noneMatch(Resource::isOpen));
        e.failures().forEach(DestroyFailure::retry);
        assertEquals("ctx", log.order().getLast());
    }
}
