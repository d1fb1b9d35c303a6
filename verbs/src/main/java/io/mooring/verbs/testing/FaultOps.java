package io.mooring.verbs.testing;

/**
 * Faults being injected into a queue pair's traffic or a device's ({@link FaultPlan}), as a provider that can inject
 * them implements it (only the soft provider can); tests use {@link FaultInjection}, which wraps it.
 */
public interface FaultOps {
    /** Request packets seen since the plan was attached. */
    long packets();

    /** How many times {@code fault} was injected. */
    long count(FaultPlan.Fault fault);

    /** Cuts the link now: nothing crosses it any more, in either direction. */
    void cut();

    /** The peer dies: its connection closes, as a dead process's sockets do, and nothing crosses again. */
    void killPeer();

    /** Stops injecting: packets flow untouched again, over a cut link too; a closed connection stays closed. */
    void stop();
}
