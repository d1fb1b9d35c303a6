package io.mooring.cli;

import io.mooring.lifecycle.ClosePolicy;
import io.mooring.lifecycle.DestroyFailedException;
import io.mooring.lifecycle.LeakDetection;
import io.mooring.lifecycle.Pin;
import io.mooring.lifecycle.Resource;
import io.mooring.lifecycle.ResourceBusyException;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.lifecycle.ResourceInfo;
import io.mooring.lifecycle.ResourceListener;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A walk through the lifecycle graph on a verbs-shaped tree (context ← PD ← MR, context ← CQ ← QP) whose "MRs"
 * own real native memory: deferred close, a pin held by an in-flight request, a STRICT refusal, closeTree, a
 * failed destroy and its retry, and a dropped handle reclaimed by the Cleaner.
 */
final class LifecycleDemo {
    private static final String DROPPED_KIND = "comp-channel";
    private final PrintStream out;
    private final CountDownLatch leakReclaimed = new CountDownLatch(1);

    private LifecycleDemo(PrintStream out) {
        this.out = out;
    }

    /** Walks the graph, printing each step to {@code out}; whether everything ended as it should. */
    static boolean walk(PrintStream out) throws InterruptedException {
        return new LifecycleDemo(out).walk();
    }

    private boolean walk() throws InterruptedException {
        ResourceGraph graph = ResourceGraph.builder().name("demo").leakDetection(LeakDetection.OFF)
                .listener(new ResourceListener() {
                    @Override public void destroyed(ResourceInfo r) {
                        out.println("    destroyed " + r.name());
                        if (r.kind().equals(DROPPED_KIND)) leakReclaimed.countDown();
                    }
                    @Override public void leaked(ResourceInfo r) {
                        out.println("    leak: " + r.name() + " was dropped without close(); the Cleaner reclaims it");
                    }
                })
                .build();

        out.println("1. build context <- pd <- mr, context <- cq <- qp (qp also under pd)");
        Resource ctx = graph.create("context", "demo-device", () -> {});
        Resource pd = ctx.createChild("pd", "", () -> {});
        Resource cq = ctx.createChild("cq", "depth=64", () -> {});
        Resource mr = register(pd, 1 << 20);
        AtomicBoolean qpBusy = new AtomicBoolean(true); // its first destroy fails, as ibv_destroy_qp can
        Resource qp = graph.create("qp", "qpn=17", () -> {
            if (qpBusy.getAndSet(false)) throw new IllegalStateException("EBUSY from ibv_destroy_qp");
        }, pd, cq);
        out.print(indent(graph.dump()));

        out.println("2. close the PD first (DEFERRED): its handle closes now, its destroy waits for the MR and QP");
        pd.close();
        out.println("    pd is " + pd.state() + ", mr is " + mr.state());

        out.println("3. a work request in flight pins the MR: closing it defers the deregistration");
        Pin inFlight = mr.pin();
        mr.close();
        out.println("    mr is " + mr.state() + " with " + mr.info().pins() + " pin");
        out.println("    completion arrives, the pin is released:");
        inFlight.close();

        out.println("4. a STRICT graph refuses to close a parent with live children");
        ResourceGraph strict = ResourceGraph.builder().name("strict").policy(ClosePolicy.STRICT).build();
        Resource strictPd = strict.create("pd", "", () -> {});
        Resource strictMr = register(strictPd, 4096);
        try {
            strictPd.close();
            out.println("    unexpected: STRICT close succeeded");
            return false;
        } catch (ResourceBusyException e) {
            out.println("    " + e.getMessage());
        }
        strictPd.closeTree();
        out.println("    closeTree() closed " + strictMr.info().name() + " then " + strictPd.info().name());

        out.println("5. the QP's destroy fails: the PD is not destroyed on top of it; a retry settles both");
        try {
            qp.close();
            out.println("    unexpected: the failing destroy succeeded");
            return false;
        } catch (DestroyFailedException e) {
            out.println("    " + e.failures().getFirst() + "; qp is " + qp.state() + ", pd is " + pd.state());
            e.failures().getFirst().retry();
        }

        out.println("6. a handle dropped without close() is found by the Cleaner");
        dropChild(cq);
        for (int i = 0; i < 500 && !leakReclaimed.await(10, TimeUnit.MILLISECONDS); i++) System.gc();

        out.println("7. close the context: everything left goes, children first");
        ctx.closeTree();
        out.print(indent(graph.dump()));
        boolean clean = graph.liveCount() == 0 && strict.liveCount() == 0 && leakReclaimed.getCount() == 0;
        out.println(clean ? "all resources destroyed, in order, exactly once" : "resources left: " + graph.dump());
        return clean;
    }

    /** A stand-in for ibv_reg_mr: a child that owns real native memory until it is destroyed. */
    @SuppressWarnings("try") // the pin is held for the duration of the block, not used in it
    private Resource register(Resource pd, long bytes) {
        Arena memory = Arena.ofShared();
        MemorySegment buffer = memory.allocate(bytes, 4096);
        try (var hold = pd.pin()) {
            return pd.createChild("mr", "len=" + buffer.byteSize(), memory::close);
        }
    }

    private void dropChild(Resource cq) {
        Resource orphan = cq.createChild(DROPPED_KIND, "", () -> {});
        out.println("    created " + orphan.info().name() + " and dropped it");
    }

    private static String indent(String text) {
        return text.indent(4);
    }
}
