package io.mooring.verbs.testing;

import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;

/**
 * Faults being injected per a {@link FaultPlan} into one queue pair's traffic or into every queue pair of a device,
 * with the figures of what was injected. Closing it stops the injection; the figures stay readable.
 */
public final class FaultInjection implements AutoCloseable {
    /**
     * What was injected so far.
     *
     * @param packets request packets seen (transmissions and retransmissions)
     * @param faults  how often each fault was injected
     */
    public record Counts(long packets, Map<FaultPlan.Fault, Long> faults) {
        public Counts {
            var copy = new EnumMap<FaultPlan.Fault, Long>(FaultPlan.Fault.class);
            copy.putAll(faults);
            faults = Collections.unmodifiableMap(copy); // in Fault order when printed
        }

        /** How often {@code fault} was injected. */
        public long of(FaultPlan.Fault fault) {
            return faults.getOrDefault(fault, 0L);
        }
    }

    private final FaultOps ops;
    private final FaultPlan plan;
    private final String target;

    /** Made by {@code injectFaults} of the device context or queue pair named {@code target}. */
    public FaultInjection(FaultOps ops, FaultPlan plan, String target) {
        this.ops = ops;
        this.plan = plan;
        this.target = target;
    }

    public FaultPlan plan() {
        return plan;
    }

    public Counts counts() {
        var faults = new EnumMap<FaultPlan.Fault, Long>(FaultPlan.Fault.class);
        for (FaultPlan.Fault f : FaultPlan.Fault.values()) faults.put(f, ops.count(f));
        return new Counts(ops.packets(), faults);
    }

    /** Cuts the link now: from here on nothing crosses it in either direction; requests end in RETRY_EXC_ERR. */
    public void cut() {
        ops.cut();
    }

    /**
     * The peer dies now: its TCP connection closes as a killed process's does, and nothing crosses the link again;
     * requests end in RETRY_EXC_ERR.
     */
    public void killPeer() {
        ops.killPeer();
    }

    /**
     * Stops injecting faults: from the next packet on the traffic flows untouched, over a link cut by the plan too;
     * a killed peer's TCP connection stays closed (requests fail until the queue pairs reconnect).
     */
    @Override
    public void close() {
        ops.stop();
    }

    @Override
    public String toString() {
        return plan + " on " + target + ": " + counts();
    }
}
