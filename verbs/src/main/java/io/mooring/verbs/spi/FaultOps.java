package io.mooring.verbs.spi;

/**
 * Faults being injected into a queue pair's traffic or a device's ({@link io.mooring.verbs.FaultPlan}); only the
 * soft provider has them.
 */
public interface FaultOps {
    /** Request packets seen since the plan was attached. */
    long packets();

    /** How many times {@code fault} was injected, by {@link io.mooring.verbs.FaultPlan.Fault} ordinal. */
    long count(int faultOrdinal);

    /** Cuts the link now: nothing crosses it any more, in either direction. */
    void cut();

    /** The peer dies: its connection closes, as a dead process's sockets do, and nothing crosses again. */
    void killPeer();

    /** Stops injecting: packets flow untouched again (a cut link stays cut, a killed peer dead). */
    void stop();
}
