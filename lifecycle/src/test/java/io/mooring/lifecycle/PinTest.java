package io.mooring.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class PinTest {
    private final DestroyLog log = new DestroyLog();

    @Test
    void destroyWaitsForTheLastPinAndRunsOnTheUnpinningThread() throws Exception {
        var graph = ResourceGraph.create();
        Resource qp = graph.create("qp", "", log.action("qp"));
        Pin a = qp.pin();
        Pin b = qp.pin();
        assertEquals(2, qp.info().pins());

        qp.close();
        assertEquals(ResourceState.CLOSING, qp.state());
        a.close();
        assertTrue(log.order().isEmpty());

        Thread unpinner = Thread.ofVirtual().start(b::close); // e.g. the completion dispatcher
        unpinner.join();
        assertEquals(List.of("qp"), log.order());
        assertEquals(ResourceState.DESTROYED, qp.state());
    }

    @Test
    void pinningAClosedResourceFailsAndLeavesNoHoldBehind() {
        var graph = ResourceGraph.create();
        Resource mr = graph.create("mr", "", log.action("mr"));
        Pin held = mr.pin();
        mr.close();
        var e = assertThrows(ResourceClosedException.class, mr::pin);
        assertTrue(e.getMessage().contains("cannot pin: mr#" + mr.id() + " is closing"), e.getMessage());
        assertEquals(1, mr.info().pins(), "the failed attempt was undone");
        held.close();
        assertEquals(1, log.runs("mr"));
    }

    @Test
    void closingAPinTwiceReleasesOnce() {
        var graph = ResourceGraph.create();
        Resource mr = graph.create("mr", "", log.action("mr"));
        Pin first = mr.pin();
        Pin second = mr.pin();
        first.close();
        first.close();
        assertEquals(1, mr.info().pins());
        mr.close();
        assertTrue(log.order().isEmpty(), "the second pin still holds it");
        second.close();
        assertEquals(List.of("mr"), log.order());
    }

    @Test
    void aPinnedChildHoldsItsClosedParentsToo() {
        var graph = ResourceGraph.create();
        Resource pd = graph.create("pd", "", log.action("pd"));
        Resource cq = graph.create("cq", "", log.action("cq"));
        Resource qp = graph.create("qp", "", log.action("qp"), pd, cq);
        try (var _ = qp.pin()) { // a pin in flight
            qp.close();
            pd.close();
            cq.close();
            assertTrue(log.order().isEmpty());
        }
        assertEquals("qp", log.order().getFirst());
        assertEquals(3, log.order().size());
    }

    @Test
    void addPinAndRemovePinAreThePinWithoutTheObject() {
        var graph = ResourceGraph.create();
        Resource mr = graph.create("mr", "", log.action("mr"));
        mr.addPin();
        mr.addPin();
        mr.close();
        assertThrows(ResourceClosedException.class, mr::addPin);
        mr.removePin();
        assertTrue(log.order().isEmpty());
        mr.removePin();
        assertEquals(List.of("mr"), log.order());
    }

    @Test
    void aRemovePinWithoutAPinIsRefusedAndCorruptsNothing() {
        var graph = ResourceGraph.create();
        Resource mr = graph.create("mr", "", log.action("mr"));
        var e = assertThrows(IllegalStateException.class, mr::removePin);
        assertTrue(e.getMessage().contains("unpin of mr#" + mr.id() + " without a matching pin"), e.getMessage());
        mr.close();
        assertEquals(List.of("mr"), log.order());
    }
}
