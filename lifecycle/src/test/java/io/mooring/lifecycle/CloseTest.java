package io.mooring.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class CloseTest {
    private final DestroyLog log = new DestroyLog();

    @Test
    void closeIsIdempotentAndDestroysExactlyOnce() {
        Resource pd = ResourceGraph.create().create("pd", "", log.action("pd"));
        pd.close();
        pd.close();
        pd.closeTree();
        assertEquals(1, log.runs("pd"));
        assertEquals(ResourceState.DESTROYED, pd.state());
        assertFalse(pd.isOpen());
    }

    @Test
    void everyOperationOnAClosedHandleThrowsNamingKindAndId() {
        var graph = ResourceGraph.create();
        Resource pd = graph.create("pd", "", log.action("pd"));
        pd.close();
        List<Executable> operations = List.of(pd::pin, pd::checkOpen, pd::parents, pd::children,
                () -> pd.createChild("mr", "", () -> {}));
        for (Executable op : operations) {
            var e = assertThrows(ResourceClosedException.class, op);
            assertTrue(e.getMessage().contains("pd#" + pd.id()), e.getMessage());
            assertEquals("pd", e.resource().orElseThrow().kind());
        }
        // Descriptive accessors stay usable for messages and diagnostics.
        assertEquals("pd", pd.kind());
        assertEquals(ResourceState.DESTROYED, pd.info().state());
    }

    @Test
    void deferredCloseClosesTheHandleNowAndDestroysAfterTheLastChild() {
        var graph = ResourceGraph.create();
        Resource pd = graph.create("pd", "", log.action("pd"));
        Resource mr1 = pd.createChild("mr", "1", log.action("mr1"));
        Resource mr2 = pd.createChild("mr", "2", log.action("mr2"));

        pd.close();
        assertEquals(ResourceState.CLOSING, pd.state());
        assertThrows(ResourceClosedException.class, pd::pin);
        assertTrue(mr1.isOpen(), "children stay usable: they hold their parent alive");
        mr1.pin().close();

        mr2.close();
        assertFalse(log.destroyed("pd"));
        mr1.close();
        assertEquals(List.of("mr2", "mr1", "pd"), log.order());
        assertEquals(ResourceState.DESTROYED, pd.state());
        assertEquals(0, graph.liveCount());
    }

    @Test
    void strictCloseWithLiveChildrenThrowsListingThemAndStaysOpen() {
        var graph = ResourceGraph.builder().policy(ClosePolicy.STRICT).leakDetection(LeakDetection.PARANOID).build();
        Resource pd = graph.create("pd", "", log.action("pd"));
        Resource mr = pd.createChild("mr", "len=4096", log.action("mr"));
        Resource mw = pd.createChild("mw", "", log.action("mw"));

        var e = assertThrows(ResourceBusyException.class, pd::close);
        assertEquals(List.of(mr.id(), mw.id()), e.liveChildren().stream().map(ResourceInfo::id).toList());
        assertTrue(e.getMessage().contains("cannot close pd#" + pd.id() + " (policy STRICT): 2 live children"),
                e.getMessage());
        // A frame of a named module (this test is patched into io.mooring.lifecycle) starts with "module@version/".
        assertTrue(e.getMessage().matches("(?s).*mr#" + mr.id() + " \\(len=4096\\) created at (\\S+/)?"
                + Pattern.quote(getClass().getName() + ".strictCloseWithLiveChildrenThrowsListingThemAndStaysOpen(")
                + ".*"), "paranoid tracking names the creation site: " + e.getMessage());
        assertTrue(pd.isOpen());
        assertTrue(log.order().isEmpty());

        mr.close();
        mw.close();
        pd.close();
        assertEquals(List.of("mr", "mw", "pd"), log.order());
    }

    @Test
    void strictCloseTreeDestroysTheSubtreeChildrenFirst() {
        var graph = ResourceGraph.builder().policy(ClosePolicy.STRICT).build();
        Resource ctx = graph.create("context", "", log.action("ctx"));
        Resource pd = ctx.createChild("pd", "", log.action("pd"));
        Resource cq = ctx.createChild("cq", "", log.action("cq"));
        Resource mr = pd.createChild("mr", "", log.action("mr"));
        Resource qp = graph.create("qp", "", log.action("qp"), pd, cq);
        Resource mw = graph.create("mw", "", log.action("mw"), pd);

        pd.closeTree();
        assertEquals(4, log.order().size());
        assertEquals("pd", log.order().getLast());
        assertTrue(List.of(mr, qp, mw, pd).stream().noneMatch(Resource::isOpen));
        assertTrue(cq.isOpen() && ctx.isOpen(), "only the subtree closes");
        assertEquals(List.of(), cq.children(), "the QP was destroyed, so the CQ has no children left");

        cq.close();
        ctx.close();
        assertEquals("ctx", log.order().getLast());
    }

    @Test
    void closeTreeOfASharedChildWaitsForPinsAnywhereInTheSubtree() {
        var graph = ResourceGraph.create();
        Resource pd = graph.create("pd", "", log.action("pd"));
        Resource mr = pd.createChild("mr", "", log.action("mr"));
        Pin inFlight = mr.pin();

        pd.closeTree();
        assertEquals(ResourceState.CLOSING, mr.state());
        assertTrue(log.order().isEmpty(), "a pinned MR is not destroyed, nor its PD");
        inFlight.close();
        assertEquals(List.of("mr", "pd"), log.order());
    }

    @Test
    void aDeepChainCascadesWithoutRecursion() {
        var graph = ResourceGraph.create();
        List<Resource> chain = new java.util.ArrayList<>(List.of(graph.create("n", "", log.action("0"))));
        for (int i = 1; i <= 20_000; i++) chain.add(chain.getLast().createChild("n", "", log.action(Integer.toString(i))));
        chain.subList(0, chain.size() - 1).forEach(Resource::close); // all deferred behind the leaf

        assertEquals(chain.size(), graph.liveCount());
        chain.getLast().close(); // the whole chain is destroyed, leaf to root, on this thread's heap stack
        assertEquals(0, graph.liveCount());
        assertEquals("20000", log.order().getFirst());
        assertEquals("0", log.order().getLast());
    }

    @Test
    void closeTreeOfADeepChainDestroysLeafToRoot() {
        var graph = ResourceGraph.create();
        Resource root = graph.create("n", "", log.action("0"));
        Resource r = root;
        for (int i = 1; i <= 20_000; i++) r = r.createChild("n", "", log.action(Integer.toString(i)));
        root.closeTree();
        assertEquals(0, graph.liveCount());
        assertEquals(20_001, log.order().size());
        assertEquals("20000", log.order().getFirst());
    }
}
