package io.mooring.verbs.soft;

import io.mooring.verbs.testing.FaultOps;
import io.mooring.verbs.testing.FaultPlan;
import io.mooring.verbs.testing.FaultPlan.Fault;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The faults a {@link FaultPlan} injects into one QP's traffic: into the request packets its requester sends and
 * their answers ({@link #exchange}), and into its responder ({@link #severs}, {@link #stallsReceive}).
 *
 * <p>Why it is deterministic: a QP's requester sends one packet at a time from its own thread and {@link #exchange}
 * runs there, drawing exactly once per packet, so packet {@code n} gets the same fault whatever other threads do
 * and whichever link (in-JVM or TCP) carries it. Decisions are made at the sender, which knows what it lost: the
 * requester's ACK-timeout retransmission runs as on a NIC, and a lost packet never leaves a TCP requester waiting
 * for an answer that cannot come.
 */
final class FaultInjector implements FaultOps {
    /** A packet held back, delivered behind the next one if that one goes over the same connection. */
    private record Late(Wire.Request request, Link link) {}

    private final FaultPlan plan;
    private final SoftQp qp;
    private final SplittableRandom random; // requester thread only
    private final SplittableRandom localRandom; // requester thread only; null: no local delays planned
    private final long stallEnds;          // System.nanoTime() until which receives are stalled
    private final AtomicLongArray counts = new AtomicLongArray(Fault.values().length);
    private volatile long packets;         // written by the requester thread only
    private volatile boolean severed;
    private Late late;                     // requester thread only

    FaultInjector(FaultPlan plan, SoftQp qp, SplittableRandom random) {
        this.plan = plan;
        this.qp = qp;
        this.random = random;
        this.localRandom = plan.probability(Fault.LOCAL_DELAY) > 0 ? random.split() : null;
        this.stallEnds = System.nanoTime() + plan.receiveStall().toNanos();
    }

    FaultPlan plan() {
        return plan;
    }

    /**
     * Sends {@code r} over {@code link} (null: not connected yet, which is no packet) with the fault its packet
     * number gets, and delivers a packet held back for it behind it. Requester thread only.
     *
     * @return the answer, or {@link Wire.Response#DROPPED} if it was lost on the way out or back (the requester
     *         then retransmits after its ACK timeout)
     */
    Wire.Response exchange(Link link, Wire.Request r, long ackTimeoutNanos) throws InterruptedException {
        if (link == null && !severed) return Wire.Response.DROPPED;
        long n = ++packets;
        double draw = random.nextDouble(); // drawn for every packet, so packet n's draw depends on n alone
        if (severed) return lost();
        Fault scheduled = plan.scheduled(n);
        Fault fault = scheduled != null ? scheduled : plan.drawn(draw);
        Late before = late;
        late = null;
        Wire.Response answer = fault == null ? link.exchange(r, ackTimeoutNanos) : inject(fault, link, r, ackTimeoutNanos);
        if (before != null && before.link == link && !severed) {
            link.exchange(before.request, ackTimeoutNanos); // its answer is for a request the requester gave up on
        }
        return answer;
    }

    private Wire.Response inject(Fault fault, Link link, Wire.Request r, long ackTimeoutNanos)
            throws InterruptedException {
        if (fault == Fault.CUT) {
            severed = true;
            return lost();
        }
        counts.incrementAndGet(fault.ordinal());
        return switch (fault) {
            case DROP_RESPONSE -> {
                link.exchange(r, ackTimeoutNanos);
                yield Wire.Response.DROPPED;
            }
            case DUPLICATE -> {
                Wire.Response first = link.exchange(r, ackTimeoutNanos);
                link.exchange(r, ackTimeoutNanos); // the responder acknowledges the copy; the requester ignores it
                yield first;
            }
            case REORDER -> hold(r, link);
            case DELAY -> {
                long by = plan.delayBy().toNanos();
                if (by >= ackTimeoutNanos) yield hold(r, link); // late: the requester retransmits first
                TimeUnit.NANOSECONDS.sleep(by);
                // A packet delayed across a reset would reach the next connection, whose PSNs may overlap.
                yield qp.carries(link) ? link.exchange(r, ackTimeoutNanos) : Wire.Response.DROPPED;
            }
            default -> Wire.Response.DROPPED; // DROP_REQUEST, CORRUPT (the receiver's ICRC check discards it)
        };
    }

    private Wire.Response hold(Wire.Request r, Link link) {
        late = new Late(r.copy(), link); // the requester reuses r for its next request
        return Wire.Response.DROPPED;
    }

    private Wire.Response lost() {
        counts.incrementAndGet(Fault.CUT.ordinal());
        return Wire.Response.DROPPED;
    }

    /**
     * How long the local work request about to execute is held back (0: not at all); drawn once per local request,
     * so request {@code n}'s delay depends only on the seed and {@code n}. Requester thread only.
     */
    long localDelayNanos() {
        if (localRandom == null || localRandom.nextDouble() >= plan.probability(Fault.LOCAL_DELAY)) return 0;
        counts.incrementAndGet(Fault.LOCAL_DELAY.ordinal());
        return plan.localDelayBy().toNanos();
    }

    /** Whether the link is cut (or the peer killed): a missing connection will not come back. */
    boolean isCut() {
        return severed;
    }

    /** Whether an incoming request is lost to a cut link (counted); asked by whoever executes it. */
    boolean severs() {
        if (!severed) return false;
        lost();
        return true;
    }

    /** Whether the responder acts as if no receive were posted (counted: an RNR NAK follows). */
    boolean stallsReceive() {
        if (System.nanoTime() - stallEnds >= 0) return false;
        counts.incrementAndGet(Fault.STALL.ordinal());
        return true;
    }

    @Override
    public long packets() {
        return packets;
    }

    @Override
    public long count(Fault fault) {
        return counts.get(fault.ordinal());
    }

    @Override
    public void cut() {
        severed = true;
    }

    @Override
    public void killPeer() {
        severed = true;
        qp.closeLink();
    }

    @Override
    public void stop() {
        qp.dropFaults(this);
    }
}
