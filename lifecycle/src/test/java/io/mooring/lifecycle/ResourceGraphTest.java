package io.mooring.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.testing.CapturedLog;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class ResourceGraphTest {
    @RegisterExtension
    final CapturedLog captured = new CapturedLog(ResourceGraph.class.getPackageName());
    private final DestroyLog log = new DestroyLog();

    @Test
    void resourceHasKindIdParentsAndLiveChildren() {
        var graph = ResourceGraph.create();
        Resource ctx = graph.create("context", "dev0", log.action("ctx"));
        Resource pd = ctx.createChild("pd", "", log.action("pd"));
        Resource cq = ctx.createChild("cq", "depth=16", log.action("cq"));
        Resource qp = graph.create("qp", "qpn=7", log.action("qp"), pd, cq);

        assertEquals("qp", qp.kind());
        assertEquals("qpn=7", qp.description());
        assertEquals(List.of(pd, cq), qp.parents());
        assertEquals(List.of(pd.id(), cq.id()), ctx.children().stream().map(ResourceInfo::id).toList());
        assertEquals(List.of(qp.id()), pd.children().stream().map(ResourceInfo::id).toList());
        assertEquals(List.of(qp.id()), cq.children().stream().map(ResourceInfo::id).toList());
        assertEquals(4, graph.liveCount());
        assertEquals(4, List.of(ctx.id(), pd.id(), cq.id(), qp.id()).stream().distinct().count());
        graph.close();
    }

    @Test
    void duplicateParentsCountOnce() {
        var graph = ResourceGraph.create();
        Resource cq = graph.create("cq", "", log.action("cq"));
        Resource qp = graph.create("qp", "", log.action("qp"), cq, cq); // send and recv CQ are the same
        assertEquals(List.of(cq), qp.parents());
        qp.close();
        cq.close();
        assertEquals(List.of("qp", "cq"), log.order());
    }

    @Test
    void creatingUnderAClosedParentFailsNamingBothAndUndoesTheNativeObject() {
        var graph = ResourceGraph.create();
        Resource pd = graph.create("pd", "", log.action("pd"));
        Resource mr = pd.createChild("mr", "", log.action("mr"));
        pd.close(); // DEFERRED: closing, mr still alive

        var e = assertThrows(ResourceClosedException.class, () -> pd.createChild("mw", "", log.action("mw")));
        assertTrue(e.getMessage().contains("cannot create mw under pd#" + pd.id()), e.getMessage());
        assertTrue(e.getMessage().contains("is closing"), e.getMessage());
        assertEquals(pd.id(), e.resource().orElseThrow().id());
        assertEquals(1, log.runs("mw"), "the native object the caller made is destroyed, not leaked");
        assertFalse(log.destroyed("pd"));

        mr.close();
        assertEquals(List.of("mw", "mr", "pd"), log.order());
        var afterDestroy = assertThrows(ResourceClosedException.class, () -> pd.createChild("mw2", "", () -> {}));
        assertTrue(afterDestroy.getMessage().contains("is destroyed"), afterDestroy.getMessage());
    }

    @Test
    void parentFromAnotherGraphIsRejected() {
        var graph = ResourceGraph.builder().name("mine").build();
        try (Resource foreign = ResourceGraph.builder().name("other").build().create("pd", "", () -> {})) {
            var e = assertThrows(IllegalArgumentException.class, () -> graph.create("mr", "", () -> {}, foreign));
            assertTrue(e.getMessage().contains("graph 'other'"), e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> graph.create(" ", "", () -> {}));
        assertThrows(NullPointerException.class, () -> graph.create("mr", "", null));
    }

    @Test
    void dumpShowsTheLiveTreeWithStatesPinsAndSharedChildrenOnce() {
        var graph = ResourceGraph.builder().name("verbs").build();
        Resource ctx = graph.create("context", "dev0", log.action("ctx"));
        Resource pd = ctx.createChild("pd", "", log.action("pd"));
        Resource cq = ctx.createChild("cq", "", log.action("cq"));
        Resource qp = graph.create("qp", "qpn=7", log.action("qp"), pd, cq);
        Pin pin = qp.pin();
        pd.close();

        String dump = graph.dump();
        String expected = """
                resource graph 'verbs': 4 live (DEFERRED, leak detection %s)
                  context#%d (dev0) OPEN
                    pd#%d CLOSING
                      qp#%d (qpn=7) OPEN, 1 pin
                    cq#%d OPEN
                      -> qp#%d (shown under pd#%d)
                """.formatted(graph.leakDetection(), ctx.id(), pd.id(), qp.id(), cq.id(), qp.id(), pd.id());
        assertEquals(expected, dump);
        pin.close();
        graph.close();
        assertEquals("resource graph 'verbs': 0 live (DEFERRED, leak detection " + graph.leakDetection() + ")\n",
                graph.dump());
    }

    @Test
    void graphCloseDestroysEverythingChildrenFirst() {
        var graph = ResourceGraph.builder().policy(ClosePolicy.STRICT).build();
        Resource ctx = graph.create("context", "", log.action("ctx"));
        Resource pd = ctx.createChild("pd", "", log.action("pd"));
        Resource cq = ctx.createChild("cq", "", log.action("cq"));
        graph.create("qp", "", log.action("qp"), pd, cq);
        graph.create("other-root", "", log.action("root2"));

        graph.close();
        assertEquals(0, graph.liveCount());
        List<String> order = log.order();
        assertEquals(5, order.size());
        assertTrue(order.indexOf("qp") < order.indexOf("pd") && order.indexOf("qp") < order.indexOf("cq"), order::toString);
        assertTrue(order.indexOf("pd") < order.indexOf("ctx") && order.indexOf("cq") < order.indexOf("ctx"), order::toString);
    }

    @Test
    void listenersSeeEveryTransitionAndCannotBreakTheGraph() {
        List<String> events = new CopyOnWriteArrayList<>();
        var graph = ResourceGraph.builder()
                .listener(new ResourceListener() {
                    @Override public void created(ResourceInfo r) { events.add("created " + r.kind()); }
                    @Override public void closed(ResourceInfo r) { events.add("closed " + r.kind()); }
                    @Override public void destroyed(ResourceInfo r) { events.add("destroyed " + r.kind()); }
                    @Override public void destroyFailed(ResourceInfo r, Throwable t) { events.add("failed " + r.kind()); }
                })
                .listener(new ResourceListener() {
                    @Override public void created(ResourceInfo r) { throw new RuntimeException("listener bug"); }
                })
                .build();
        Resource pd = graph.create("pd", "", log.action("pd"));
        Resource mr = pd.createChild("mr", "", log.failing("mr", 1));
        pd.close();
        assertThrows(DestroyFailedException.class, mr::close);
        graph.failures().getFirst().retry();

        assertEquals(List.of("created pd", "created mr", "closed pd", "closed mr", "failed mr",
                "destroyed mr", "destroyed pd"), events);
    }

    @Test
    void leakDetectionLevelsParseAndBadValuesAreNamed() {
        assertSame(LeakDetection.PARANOID, LeakDetection.parse(" Paranoid "));
        assertSame(LeakDetection.OFF, LeakDetection.parse("off"));
        var e = assertThrows(IllegalArgumentException.class, () -> LeakDetection.parse("loud"));
        assertTrue(e.getMessage().contains("mooring.leakDetection=loud"), e.getMessage());
        assertTrue(e.getMessage().contains("[off, simple, paranoid]"), e.getMessage());
    }
}
