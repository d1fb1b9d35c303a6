package io.mooring.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.testing.CapturedLog;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class LeakDetectionTest {
    private final DestroyLog log = new DestroyLog();
    private final List<ResourceInfo> leaks = new CopyOnWriteArrayList<>();
    @RegisterExtension
    final CapturedLog captured = new CapturedLog(ResourceGraph.class.getPackageName());
    private final List<CapturedLog.Entry> records = captured.entries();

    private ResourceGraph graph(LeakDetection level) {
        return ResourceGraph.builder().leakDetection(level).listener(new ResourceListener() {
            @Override public void leaked(ResourceInfo r) { leaks.add(r); }
        }).build();
    }

    @Test
    void anUnreachableHandleIsReportedWithItsCreationSiteAndDestroyed() {
        var graph = graph(LeakDetection.PARANOID);
        long id = createAndDrop(graph, "mr");
        awaitGc(() -> log.destroyed("mr"));

        assertEquals(List.of(id), leaks.stream().map(ResourceInfo::id).toList());
        CapturedLog.Entry warning = records.stream().filter(r -> r.message().startsWith("LEAK: mr#" + id)).findFirst()
                .orElseThrow(() -> new AssertionError("no leak warning in " + records));
        assertNotNull(warning.thrown(), "paranoid: the creation site comes with the report");
        assertTrue(warning.thrown().getStackTrace()[0].getMethodName().equals("createAndDrop"),
                () -> "site starts at the caller: " + warning.thrown().getStackTrace()[0]);
        assertEquals(0, graph.liveCount());
    }

    private long createAndDrop(ResourceGraph graph, String kind) {
        return graph.create(kind, "", log.action(kind)).id();
    }

    @Test
    void simpleLevelReportsWithoutSiteAndSaysHowToGetOne() {
        var graph = graph(LeakDetection.SIMPLE);
        createAndDrop(graph, "cq");
        awaitGc(() -> log.destroyed("cq"));
        CapturedLog.Entry warning = records.stream().filter(r -> r.message().startsWith("LEAK: cq#")).findFirst().orElseThrow();
        assertTrue(warning.message().contains("-Dmooring.leakDetection=paranoid"), warning.message());
    }

    @Test
    void offIsSilentButStillDestroys() {
        var graph = graph(LeakDetection.OFF);
        createAndDrop(graph, "pd");
        awaitGc(() -> log.destroyed("pd"));
        assertEquals(1, leaks.size(), "listeners still hear of it, for stats");
        assertTrue(records.isEmpty(), () -> "nothing logged: " + records);
    }

    @Test
    void aLeakedSubtreeIsDestroyedChildrenFirstWhateverOrderTheCleanerFindsIt() {
        var graph = graph(LeakDetection.SIMPLE);
        dropTree(graph);
        awaitGc(() -> log.destroyed("pd"));
        assertEquals(List.of("mw", "mr", "pd"), log.order());
        assertEquals(0, graph.liveCount());
    }

    private void dropTree(ResourceGraph graph) {
        Resource pd = graph.create("pd", "", log.action("pd"));
        pd.createChild("mr", "", log.action("mr")).createChild("mw", "", log.action("mw"));
    }

    @Test
    void aLeakedButPinnedResourceIsDestroyedWhenThePinGoes() {
        var graph = graph(LeakDetection.SIMPLE);
        Pin inFlight = pinAndDrop(graph);
        awaitGc(() -> leaks.size() == 1);
        assertEquals(0, log.runs("qp"), "the work request in flight still holds it");
        inFlight.close();
        assertEquals(1, log.runs("qp"));
    }

    private Pin pinAndDrop(ResourceGraph graph) {
        return graph.create("qp", "", log.action("qp")).pin();
    }

    @Test
    void anExplicitlyClosedHandleIsNeverReported() {
        var graph = graph(LeakDetection.SIMPLE);
        graph.create("closed", "", log.action("closed")).close();
        createAndDrop(graph, "leaked");
        awaitGc(() -> log.destroyed("leaked"));
        assertEquals(List.of("leaked"), leaks.stream().map(ResourceInfo::kind).toList());
    }

    private static void awaitGc(BooleanSupplier done) {
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("the Cleaner did not run within 20 s");
            System.gc();
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }
}
