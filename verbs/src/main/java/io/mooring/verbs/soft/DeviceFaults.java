package io.mooring.verbs.soft;

import io.mooring.verbs.testing.FaultOps;
import io.mooring.verbs.testing.FaultPlan;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A {@link FaultPlan} injected into every QP of one device context: each QP gets its own {@link FaultInjector},
 * with a generator split from the plan's seed in the order the QPs join (existing ones by QP number, then new ones
 * as they are created), so each QP's faults do not depend on how the QPs' threads interleave.
 */
final class DeviceFaults implements FaultOps {
    private final FaultPlan plan;
    private final SplittableRandom seeds;                         // guarded by this
    private final List<FaultInjector> injectors = new ArrayList<>(); // guarded by this
    private boolean stopped;                                       // guarded by this

    DeviceFaults(FaultPlan plan) {
        this.plan = plan;
        this.seeds = new SplittableRandom(plan.seed());
    }

    /** Injects the plan into {@code qp} too, unless stopped. */
    synchronized void adopt(SoftQp qp) {
        if (stopped) return;
        var injector = new FaultInjector(plan, qp, seeds.split());
        qp.adopt(injector);
        injectors.add(injector);
    }

    synchronized boolean isStopped() {
        return stopped;
    }

    @Override
    public synchronized long packets() {
        long sum = 0;
        for (FaultInjector f : injectors) sum += f.packets();
        return sum;
    }

    @Override
    public synchronized long count(FaultPlan.Fault fault) {
        long sum = 0;
        for (FaultInjector f : injectors) sum += f.count(fault);
        return sum;
    }

    @Override
    public synchronized void cut() {
        for (FaultInjector f : injectors) f.cut();
    }

    @Override
    public synchronized void killPeer() {
        for (FaultInjector f : injectors) f.killPeer();
    }

    @Override
    public synchronized void stop() {
        stopped = true;
        for (FaultInjector f : injectors) f.stop();
    }
}
