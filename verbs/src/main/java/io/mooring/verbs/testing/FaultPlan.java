package io.mooring.verbs.testing;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Which faults the soft fabric injects into a queue pair's traffic ({@link io.mooring.verbs.QueuePair#injectFaults})
 * or into every queue pair of a device ({@link io.mooring.verbs.DeviceContext#injectFaults}), so that RC retries, RNR,
 * flushes and transport errors — and every layer above them — can be tested deterministically. Only the {@code soft}
 * provider injects faults; a real NIC's cannot be scheduled.
 *
 * <p>A plan acts on the <em>request packets</em> its queue pair sends (every transmission, retransmissions
 * included, numbered 1, 2, ... from the moment the plan is attached) and on their answers. Each packet suffers
 * at most one fault: the one {@link #at scheduled} for its number, else one drawn with the probabilities below
 * from a generator seeded with {@link #seed}, one draw per packet — so which fault packet {@code n} gets depends
 * only on the seed and {@code n}. What each fault does is what a NIC sees:
 * <ul>
 *   <li>{@link Fault#DROP_REQUEST}, {@link Fault#CORRUPT} (the responder's ICRC check discards it): the responder
 *       never sees it; the requester retransmits after its ACK timeout.
 *   <li>{@link Fault#DROP_RESPONSE}: executed, but the ACK (READ data, atomic result) is lost; the retransmission
 *       is a duplicate the responder acknowledges without executing it again (an atomic's result is replayed).
 *   <li>{@link Fault#DUPLICATE}: arrives twice; executed once, both acknowledged.
 *   <li>{@link Fault#REORDER}: held back and delivered behind the next packet the link carries (never, if none
 *       follows); meanwhile the requester times out and retransmits, so execution stays in order and the late
 *       copy is a duplicate. (The soft requester has one request in flight, so the packet behind is its own
 *       retransmission: the PSN gap that makes a pipelining NIC's responder NAK out of sequence does not arise.)
 *   <li>{@link Fault#DELAY}: delivered {@link #delayBy} later; a delay of at least the ACK timeout makes it late,
 *       as {@link Fault#REORDER}.
 *   <li>{@link Fault#CUT}: from that packet on the link carries nothing in either direction: requests end in
 *       RETRY_EXC_ERR once {@code retry_cnt} retransmissions are lost.
 * </ul>
 * A plan also {@link #stallReceives stalls} the queue pair's responder: for a while it acts as if no receive
 * were posted, so SENDs reaching it get RNR NAKs; and it {@link #delayLocal delays local work requests} (BIND_MW,
 * LOCAL_INV), as a NIC behind on its send queue does: the window keeps its old binding, admitting accesses, until
 * the request executes. {@link FaultInjection#counts()} reports what was injected.
 *
 * <p>Deterministic: the fault of every packet, hence — for a workload posted in the same order — the counts, the
 * completions and the memory contents, over the in-JVM link and over TCP alike. Not deterministic: how many RNR
 * NAKs a stall of a given duration causes, and anything decided by another thread's timing ({@link
 * FaultInjection#cut()} or {@link FaultInjection#killPeer()} while requests are in flight, receives posted while
 * a SEND is retried).
 */
public final class FaultPlan {
    /**
     * The faults a plan can inject, and the keys of {@link FaultInjection.Counts}. The first six are drawn with a
     * probability each; in this order their probabilities partition [0, 1).
     */
    public enum Fault {
        DROP_REQUEST, DROP_RESPONSE, DUPLICATE, REORDER, CORRUPT, DELAY,
        /** A packet lost to a cut link or a killed peer (counted in both directions). */
        CUT,
        /** An RNR NAK answered by a stalled responder; cannot be {@linkplain FaultPlan#at scheduled} per packet. */
        STALL,
        /** A local work request (bind, invalidate) executed late; drawn per local request, not per packet. */
        LOCAL_DELAY
    }

    /** How many faults, from the first, are drawn with a probability. */
    private static final int DRAWN = Fault.DELAY.ordinal() + 1;
    private static final Duration MAX_DELAY = Duration.ofMinutes(1);
    private static final Duration MAX_STALL = Duration.ofDays(1);

    private final long seed;
    private final double[] probability; // by ordinal, of the drawn faults
    private final Duration delayBy;
    private final Duration stallReceives;
    private final Map<Long, Fault> schedule;
    private final double localDelayProbability;
    private final Duration localDelayBy;

    private FaultPlan(long seed, double[] probability, Duration delayBy, Duration stallReceives,
                      Map<Long, Fault> schedule, double localDelayProbability, Duration localDelayBy) {
        this.seed = seed;
        this.probability = probability;
        this.delayBy = delayBy;
        this.stallReceives = stallReceives;
        this.schedule = schedule;
        this.localDelayProbability = localDelayProbability;
        this.localDelayBy = localDelayBy;
    }

    /** A plan that injects nothing yet, drawing from a generator seeded with {@code seed}. */
    public static FaultPlan seeded(long seed) {
        return new FaultPlan(seed, new double[DRAWN], Duration.ofMillis(1), Duration.ZERO, Map.of(), 0, Duration.ZERO);
    }

    /** Each request packet is lost with probability {@code p}. */
    public FaultPlan dropRequests(double p) {
        return withProbability(Fault.DROP_REQUEST, p);
    }

    /** Each answer is lost with probability {@code p} (after the request was executed). */
    public FaultPlan dropResponses(double p) {
        return withProbability(Fault.DROP_RESPONSE, p);
    }

    /** Each request packet arrives twice with probability {@code p}. */
    public FaultPlan duplicate(double p) {
        return withProbability(Fault.DUPLICATE, p);
    }

    /** Each request packet arrives behind the next one with probability {@code p}. */
    public FaultPlan reorder(double p) {
        return withProbability(Fault.REORDER, p);
    }

    /** Each request packet is damaged in flight, and so discarded, with probability {@code p}. */
    public FaultPlan corrupt(double p) {
        return withProbability(Fault.CORRUPT, p);
    }

    /** Each request packet is delayed by {@code by} with probability {@code p}; {@code by} also applies to {@link #at}. */
    public FaultPlan delay(double p, Duration by) {
        Objects.requireNonNull(by, "by");
        if (by.isNegative() || by.compareTo(MAX_DELAY) > 0) {
            throw new IllegalArgumentException("a delay must be in [0, " + MAX_DELAY + "], was " + by);
        }
        return withProbability(Fault.DELAY, p).with(by, stallReceives, schedule);
    }

    /**
     * Each local work request the queue pair executes (BIND_MW, LOCAL_INV; 1, 2, ... from the moment the plan is
     * attached) is held back {@code by} before it executes, with probability {@code p}, drawn per local request from
     * a generator of its own (split from the packets' one, so a plan with local delays draws other packet faults than
     * the same plan without). Meanwhile the window keeps its binding: a lease's key works until its invalidation has
     * executed, so whoever reuses the memory must wait for that completion. A queue pair moved to ERROR or reset
     * during the delay flushes or discards the request, as a NIC does.
     */
    public FaultPlan delayLocal(double p, Duration by) {
        Objects.requireNonNull(by, "by");
        if (!(p >= 0 && p <= 1)) {
            throw new IllegalArgumentException("LOCAL_DELAY probability must be in [0, 1], was " + p);
        }
        if (by.isNegative() || by.compareTo(MAX_DELAY) > 0) {
            throw new IllegalArgumentException("a local delay must be in [0, " + MAX_DELAY + "], was " + by);
        }
        return new FaultPlan(seed, probability, delayBy, stallReceives, schedule, p, by);
    }

    /**
     * Packet {@code packet} (1 = the first sent after the plan is attached) suffers {@code fault}, whatever the
     * draw says. {@link Fault#CUT} cuts the link at that packet.
     */
    public FaultPlan at(long packet, Fault fault) {
        Objects.requireNonNull(fault, "fault");
        if (packet < 1) throw new IllegalArgumentException("packets are numbered from 1, was " + packet);
        if (fault == Fault.STALL || fault == Fault.LOCAL_DELAY) {
            throw new IllegalArgumentException(fault + " does not act on a packet: use "
                    + (fault == Fault.STALL ? "stallReceives" : "delayLocal"));
        }
        var next = new TreeMap<>(schedule);
        next.put(packet, fault);
        return with(delayBy, stallReceives, next);
    }

    /**
     * For {@code duration} from the moment the plan is attached, the queue pair's responder answers every request
     * that needs a receive (SEND, WRITE with immediate) with an RNR NAK, as if none were posted: the sender
     * retries per its {@code rnr_retry}. Its receives stay queued.
     */
    public FaultPlan stallReceives(Duration duration) {
        Objects.requireNonNull(duration, "duration");
        if (duration.isNegative() || duration.compareTo(MAX_STALL) > 0) {
            throw new IllegalArgumentException("a stall must be in [0, " + MAX_STALL + "], was " + duration);
        }
        return with(delayBy, duration, schedule);
    }

    public long seed() {
        return seed;
    }

    /** The probability with which {@code fault} is drawn: for a packet, or for a local request (LOCAL_DELAY). */
    public double probability(Fault fault) {
        if (fault == Fault.LOCAL_DELAY) return localDelayProbability;
        return fault.ordinal() < DRAWN ? probability[fault.ordinal()] : 0;
    }

    /** How long a local work request drawn for {@link Fault#LOCAL_DELAY} is held back. */
    public Duration localDelayBy() {
        return localDelayBy;
    }

    public Duration delayBy() {
        return delayBy;
    }

    /** How long the responder's receives are stalled for once the plan is attached. */
    public Duration receiveStall() {
        return stallReceives;
    }

    /** The fault scheduled for packet {@code packet}, or null. */
    public Fault scheduled(long packet) {
        return schedule.get(packet);
    }

    /**
     * The fault that {@code draw}, a uniform draw in [0, 1), selects: the probabilities partition [0, 1) in
     * {@link Fault} order; null (no fault) above their sum.
     */
    public Fault drawn(double draw) {
        double upTo = 0;
        Fault[] faults = Fault.values();
        for (int i = 0; i < DRAWN; i++) {
            upTo += probability[i];
            if (draw < upTo) return faults[i];
        }
        return null;
    }

    private FaultPlan withProbability(Fault fault, double p) {
        if (!(p >= 0 && p <= 1)) throw new IllegalArgumentException(fault + " probability must be in [0, 1], was " + p);
        double[] next = probability.clone();
        next[fault.ordinal()] = p;
        double sum = 0;
        for (double q : next) sum += q;
        if (sum > 1) {
            throw new IllegalArgumentException("the fault probabilities add up to " + sum + " with " + fault + " at "
                    + p + ": a packet suffers at most one fault, so they must add up to at most 1");
        }
        return new FaultPlan(seed, next, delayBy, stallReceives, schedule, localDelayProbability, localDelayBy);
    }

    private FaultPlan with(Duration delay, Duration stall, Map<Long, Fault> nextSchedule) {
        return new FaultPlan(seed, probability, delay, stall, Map.copyOf(nextSchedule), localDelayProbability,
                localDelayBy);
    }

    @Override
    public String toString() {
        var s = new StringBuilder("FaultPlan[seed=").append(seed);
        for (Fault f : Fault.values()) {
            if (probability(f) > 0) s.append(", ").append(f).append('=').append(probability(f));
        }
        if (probability(Fault.DELAY) > 0 || schedule.containsValue(Fault.DELAY)) s.append(", delayBy=").append(delayBy);
        if (!stallReceives.isZero()) s.append(", stallReceives=").append(stallReceives);
        if (localDelayProbability > 0) s.append(", localDelayBy=").append(localDelayBy);
        if (!schedule.isEmpty()) s.append(", at=").append(new TreeMap<>(schedule));
        return s.append(']').toString();
    }
}
