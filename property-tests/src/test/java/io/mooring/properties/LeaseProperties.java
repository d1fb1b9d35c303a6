package io.mooring.properties;

import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.lists;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.EndReason;
import io.mooring.lease.Isolation;
import io.mooring.lease.Lease;
import io.mooring.lease.LeaseLimits;
import io.mooring.lease.LeaseManager;
import io.mooring.lease.LeaseRefusedException;
import io.mooring.lease.LeaseStats;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.Access;
import io.mooring.verbs.CompletionDispatcher;
import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.QpCapabilities;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkCompletionException;
import io.mooring.verbs.WorkRequest;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.quicktheories.api.Pair;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * Random lease programs over a live pair of sessions on the soft provider (owner on {@code soft0}, requester on
 * {@code soft1}, the TCP fabric between them): the requester asks for leases of random sizes, long or short,
 * writes and reads through them, releases, renews, drops handles (released by the Cleaner), lets short ones
 * expire, kills the session, and aims stray WRITEs and READs through the keys of ended leases and past the end
 * of live ones; the owner ends leases itself and allocates filler blocks from the same arena, which land next to
 * and inside memory that leases used.
 *
 * <p>A model keeps the image of every live lease's block and of every filler, and after each step compares them
 * byte for byte with the owner's memory: a remote operation changes a block only through that block's active
 * lease. A long lease's operations must succeed; one issued outside a lease must fail — refused locally before
 * posting, or REM_ACCESS_ERR at the owner (which breaks both QPs: the sessions are lost, every lease of theirs
 * ends, and the program goes on over a new pair). Short leases (50–150 ms, 50 ms grace) may expire at any
 * moment, so for them the model accepts either outcome and follows the one observed. Every lease must end
 * exactly once, for a reason the model allows; the owners' {@link LeaseStats} must count exactly the ends
 * observed; and at the end both arenas must have no live block and the resource graph must be empty.
 *
 * <p>{@code -Dmooring.lease.examples=N} raises the number of programs for a long run.
 */
class LeaseProperties {
    private static final int EXAMPLES = Integer.getInteger("mooring.lease.examples", 60);
    private static final int MAX_STEPS = 24;
    private static final Set<Access> ALL = EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE, Access.REMOTE_ATOMIC);
    private static final Duration LONG = Duration.ofSeconds(60);
    private static final LeaseLimits LIMITS = new LeaseLimits(1 << 20, 64, LONG, Duration.ofMinutes(10), ALL,
            Duration.ofMillis(50));
    /**
     * Sessions lost and handles leaked on purpose are logged as warnings: kept out of the build output (the
     * agent's own failures are checked by AgentFuzzTest; here every outcome is checked against the model).
     */
    private final Logger leaseLog = Logger.getLogger(RdmaSession.class.getPackageName());
    private Level leaseLevel;

    @BeforeEach
    void quiet() {
        leaseLevel = leaseLog.getLevel();
        leaseLog.setLevel(Level.OFF);
    }

    @AfterEach
    void restore() {
        leaseLog.setLevel(leaseLevel);
    }

    /** Steps that did something (found a lease or filler to act on), per kind, over all examples. */
    private static final Map<Class<?>, Integer> RAN = new java.util.concurrent.ConcurrentHashMap<>();

    private static void ran(Op op) {
        RAN.merge(op.getClass(), 1, Integer::sum);
    }

    @Test
    void remoteOperationsChangeOnlyLeasedBlocksAndEveryLeaseEndsOnce() {
        qt().withExamples(EXAMPLES).withShrinkCycles(20)
                .forAll(Generate.pick(List.of(Isolation.WINDOW, Isolation.DEDICATED_REGISTRATION)), programs())
                .checkAssert((isolation, program) -> {
                    try (var run = new Run(isolation)) {
                        run.execute(program);
                    }
                });
        for (Class<?> kind : Op.class.getPermittedSubclasses()) {
            if (RAN.getOrDefault(kind, 0) == 0) throw new AssertionError("no " + kind.getSimpleName() + " step ever ran: " + RAN);
        }
        if (Boolean.getBoolean("mooring.lease.verbose")) System.out.println("steps run: " + RAN);
    }

    // ---- the programs ------------------------------------------------------------------------------------------

    /** One step. {@code pick} chooses among the leases or fillers that exist when it runs (modulo). */
    sealed interface Op permits Request, Write, Read, Release, Expire, Renew, Drop, OwnerEnd, Stray, Kill, Filler,
            FreeFiller, Race, Drain {}

    /** Asks for {@code size} bytes: for a minute, for 50 ms + {@code shortMillis}, or longer than the owner allows. */
    record Request(int size, Term term, int shortMillis) implements Op {}

    enum Term { LONG, SHORT, TOO_LONG }

    /** Writes through a segment: inside it, or (outside) reaching one byte past its end. */
    record Write(int pick, int offset, int length, boolean outside, int seed) implements Op {}

    record Read(int pick, int offset, int length) implements Op {}

    /** Closes a segment (RELEASE, waits for RELEASE_ACK). */
    record Release(int pick) implements Op {}

    /** Waits until a short lease expires at the owner. */
    record Expire(int pick) implements Op {}

    /** Renews for a minute, or for longer than the owner allows. */
    record Renew(int pick, boolean tooLong) implements Op {}

    /** Drops a segment without closing it; its Cleaner must release the lease. */
    record Drop(int pick) implements Op {}

    /**
     * The owner ends a lease on its own ({@link Lease#close()}): the requester is not told. Sometimes a lease that
     * has already ended: nothing may happen twice.
     */
    record OwnerEnd(int pick) implements Op {}

    /** A raw WRITE or READ on the requester's QP through an ended lease's key, or just past a live lease. */
    record Stray(int pick, boolean pastEnd, int offset, boolean read) implements Op {}

    /** The requester's session goes away (its process ended). */
    record Kill() implements Op {}

    /** The owner allocates a block of {@code size} from the leasing arena and fills it from {@code seed}. */
    record Filler(int size, int seed) implements Op {}

    record FreeFiller(int pick) implements Op {}

    /** A requester thread keeps writing through a live lease while the owner ends it and allocates fillers. */
    record Race(int pick) implements Op {}

    /**
     * The owner posts a receive into a leased block (through the lease, on a QP of its own) and ends the lease:
     * until a SEND fills the receive, the block must stay out of the arena — fillers allocated meanwhile must not
     * get it, and the SEND must land in the block, not in them.
     */
    record Drain(int pick) implements Op {}

    /** Programs start with a long lease, so that the steps acting on one have something to act on. */
    private static Gen<List<Op>> programs() {
        Gen<Op> first = Generate.range(1, 4096).map(size -> new Request(size, Term.LONG, 0));
        return first.zip(lists().of(ops()).ofSizeBetween(0, MAX_STEPS - 1),
                (head, rest) -> java.util.stream.Stream.concat(java.util.stream.Stream.of(head), rest.stream()).toList());
    }

    private static Gen<Op> ops() {
        Gen<Integer> index = Generate.range(0, 99);
        Gen<Integer> size = Generate.frequency(List.of(Pair.of(3, Generate.range(1, 256)),
                Pair.of(1, Generate.range(257, 8192))));
        Gen<Op> request = size.zip(Generate.frequency(List.of(Pair.of(6, Generate.constant(Term.LONG)),
                Pair.of(3, Generate.constant(Term.SHORT)), Pair.of(1, Generate.constant(Term.TOO_LONG)))),
                Generate.range(0, 100), Request::new);
        Gen<Boolean> rarely = Generate.frequency(List.of(Pair.of(1, Generate.constant(true)),
                Pair.of(6, Generate.constant(false))));
        Gen<Op> write = index.zip(Generate.range(0, 8191), Generate.range(0, 8191), rarely, Generate.range(0, 1 << 20),
                Write::new);
        Gen<Op> read = index.zip(Generate.range(0, 8191), Generate.range(0, 8191), Read::new);
        Gen<Op> stray = index.zip(Generate.booleans(), Generate.range(0, 8191), Generate.booleans(), Stray::new);
        return Generate.frequency(List.of(
                Pair.of(6, request), Pair.of(7, write), Pair.of(3, read),
                Pair.of(3, index.map(Release::new)), Pair.of(2, index.map(Expire::new)),
                Pair.of(2, index.zip(rarely, Renew::new)), Pair.of(1, index.map(Drop::new)),
                Pair.of(1, index.map(OwnerEnd::new)), Pair.of(2, stray), Pair.of(1, Generate.constant(new Kill())),
                Pair.of(3, size.zip(Generate.range(0, 1 << 20), Filler::new)), Pair.of(1, index.map(FreeFiller::new)),
                Pair.of(2, index.map(Race::new)), Pair.of(3, index.map(Drain::new))));
    }

    // ---- one run -----------------------------------------------------------------------------------------------

    /** What the model knows of one granted lease. */
    private static final class Leased {
        final String name;
        final long id;
        final Lease owner;          // the owner's side; null if it ended before the requester could look it up
        final long address;
        final int rkey;
        final int length;
        final byte[] image;         // the block's bytes as long as the lease is active
        final int generation;       // which session pair granted it
        final boolean everShort;
        RemoteSegment segment;      // null once dropped
        boolean closed;             // the requester closed its segment
        boolean shortLived;
        EnumSet<EndReason> expected; // the ends a step of ours allows; null while nothing of ours ended it

        Leased(String name, RemoteSegment segment, Lease owner, byte[] image, int generation, boolean shortLived) {
            this.name = name;
            this.segment = segment;
            this.id = segment.leaseId();
            this.owner = owner;
            this.address = segment.address();
            this.rkey = segment.rkey();
            this.length = (int) segment.length();
            this.image = image;
            this.generation = generation;
            this.everShort = shortLived;
            this.shortLived = shortLived;
        }

        boolean ownerActive() {
            return owner != null && !owner.ended().isDone();
        }

        /** Records that a step of ours ends the lease with {@code reason} (a short one may have expired first). */
        void ending(EndReason reason) {
            if (expected != null) return;
            expected = everShort ? EnumSet.of(reason, EndReason.EXPIRED) : EnumSet.of(reason);
        }

        Set<EndReason> allowed() {
            if (expected != null) return expected;
            return everShort ? EnumSet.of(EndReason.EXPIRED) : EnumSet.noneOf(EndReason.class);
        }

        @Override
        public String toString() {
            return name + "(lease " + id + ", " + length + " B" + (shortLived ? ", short" : "") + ")";
        }
    }

    private record FillerBlock(String name, Block block, byte[] image) {}

    private static final class Run implements AutoCloseable {
        private final ResourceGraph graph = ResourceGraph.builder().name("lease-properties").build();
        private final Isolation isolation;
        private final ProtectionDomain ownerPd;
        private final ProtectionDomain requesterPd;
        private final RdmaArena ownerArena;
        private final RdmaArena requesterArena;
        private final List<Leased> leases = new ArrayList<>();
        private final List<FillerBlock> fillers = new ArrayList<>();
        private final List<LeaseManager> managers = new ArrayList<>();
        private final List<RdmaSession> requesters = new ArrayList<>();
        private int dropped;
        private final List<String> trace = new ArrayList<>();
        private final QueuePair ownerLocal;   // the owner's own QP (not the session's), for Drain
        private final QueuePair sender;       // its peer on the requester's device
        private final Block sendSource;
        private RdmaSession owner;
        private RdmaSession requester;
        private RdmaEndpoint ownerEndpoint;
        private RdmaEndpoint requesterEndpoint;
        private RdmaListener listener;
        private int generation;
        private long granted;
        private int step;

        Run(Isolation isolation) {
            this.isolation = isolation;
            ownerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
            requesterPd = RdmaDevices.open("soft:soft1", graph).allocateProtectionDomain();
            ownerArena = arena(ownerPd);
            requesterArena = arena(requesterPd);
            ownerLocal = queuePair(ownerPd);
            sender = queuePair(requesterPd);
            ownerLocal.connect(sender.info());
            sender.connect(ownerLocal.info());
            sendSource = requesterArena.allocateShared(8192, 8);
            sendSource.segment().fill((byte) 0x3c);
            connect();
        }

        private static QueuePair queuePair(ProtectionDomain pd) {
            CompletionQueue cq = pd.context().createCompletionQueue(64);
            cq.startDispatcher(CompletionDispatcher.Mode.EVENTS, wc -> {});
            return pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
        }

        /** With thread caches, as by default: the sessions' threads allocate, free and die with their sessions. */
        private static RdmaArena arena(ProtectionDomain pd) {
            return RdmaArena.builder(pd).chunkSize(1 << 20).shards(1)
                    .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
        }

        private void connect() {
            generation++;
            if (ownerEndpoint == null) {
                // The program provokes lost sessions on purpose and reconnects at once: no backoff.
                ownerEndpoint = RdmaEndpoint.builder(ownerPd, ownerArena).limits(LIMITS).isolation(isolation)
                        .failureBackoff(Duration.ZERO).build();
                requesterEndpoint = RdmaEndpoint.builder(requesterPd, requesterArena).isolation(isolation).build();
                try {
                    listener = ownerEndpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                } catch (java.io.IOException e) {
                    throw new IllegalStateException(e);
                }
            }
            var accepted = listener.accept();
            requester = requesterEndpoint.connect(listener.address()).join();
            owner = accepted.join();
            managers.add(owner.leases());
            requesters.add(requester);
            note("session pair " + generation + " (" + isolation + ")");
        }

        void execute(List<Op> program) {
            for (Op op : program) {
                step++;
                note(op.toString());
                switch (op) {
                    case Request r -> request(r);
                    case Write w -> write(w);
                    case Read r -> read(r);
                    case Release r -> release(r);
                    case Expire e -> expire(e);
                    case Renew r -> renew(r);
                    case Drop d -> drop(d);
                    case OwnerEnd e -> ownerEnd(e);
                    case Stray s -> stray(s);
                    case Kill _ -> kill();
                    case Filler f -> filler(f);
                    case FreeFiller f -> freeFiller(f);
                    case Race r -> race(r);
                    case Drain d -> drain(d);
                }
                verify();
            }
        }

        // ---- steps ----

        private void request(Request op) {
            ran(op);
            Duration duration = switch (op.term()) {
                case LONG -> LONG;
                case SHORT -> Duration.ofMillis(50 + op.shortMillis());
                case TOO_LONG -> LONG.plusSeconds(1);
            };
            if (op.term() == Term.TOO_LONG) {
                var e = expectThrows(LeaseRefusedException.class, () -> requester.requestRemote(op.size(), duration, ALL));
                check(e.getMessage().contains("outside"), "refusal does not name the limit: " + e.getMessage());
                return;
            }
            RemoteSegment segment = requester.requestRemote(op.size(), duration, ALL);
            granted++;
            Lease lease = owner.leases().lease(segment.leaseId());
            boolean isShort = op.term() == Term.SHORT;
            check(lease != null || isShort, "lease " + segment.leaseId() + " is not active at the owner after GRANT");
            byte[] image = null;
            if (lease != null) {
                check(lease.address() == segment.address() && lease.length() == op.size() && lease.rkey() == segment.rkey(),
                        "GRANT disagrees with the owner's " + lease);
                image = snapshot(lease);
            }
            var l = new Leased("L" + leases.size(), segment, lease, image == null ? new byte[op.size()] : image,
                    generation, isShort);
            leases.add(l);
            note("  granted " + l + " at 0x" + Long.toHexString(l.address) + " rkey 0x" + Integer.toHexString(l.rkey));
        }

        /** The owner's block bytes, or null if the lease ended (and its block closed) meanwhile. */
        private static byte[] snapshot(Lease lease) {
            try {
                return lease.block().segment().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
            } catch (IllegalStateException e) {
                return null;
            }
        }

        private Leased pickWithSegment(int pick) {
            return pick(leases.stream().filter(l -> l.segment != null && !l.closed).toList(), pick);
        }

        /** Whether an operation through {@code l}'s segment must succeed: a long lease nothing has ended. */
        private boolean mustWork(Leased l) {
            return !l.shortLived && l.expected == null && l.generation == generation && requester.lostReason() == null;
        }

        private void write(Write op) {
            Leased l = pickWithSegment(op.pick());
            if (l == null) return;
            ran(op);
            int offset = op.offset() % l.length;
            int length = 1 + op.length() % (l.length - offset);
            if (op.outside()) {
                offset = l.length - length + 1;
            }
            byte[] data = new byte[length];
            new SplittableRandom(op.seed()).nextBytes(data);
            try (Block src = requesterArena.allocate(length)) {
                src.segment().copyFrom(MemorySegment.ofArray(data));
                int at = offset;
                Outcome outcome = attempt(l, () -> l.segment.write(src, at));
                if (op.outside()) {
                    check(outcome == Outcome.OUT_OF_BOUNDS || outcome == Outcome.REFUSED && !mustWork(l),
                            "a write past the end of " + l + " was " + outcome);
                    return;
                }
                if (outcome == Outcome.DONE) System.arraycopy(data, 0, l.image, offset, length);
            }
        }

        private void read(Read op) {
            Leased l = pickWithSegment(op.pick());
            if (l == null) return;
            ran(op);
            int offset = op.offset() % l.length;
            int length = 1 + op.length() % (l.length - offset);
            try (Block dst = requesterArena.allocate(length)) {
                if (attempt(l, () -> l.segment.read(dst, offset)) == Outcome.DONE) {
                    byte[] got = dst.segment().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
                    check(java.util.Arrays.equals(got, 0, length, l.image, offset, offset + length),
                            "READ of " + l + " [" + offset + ", +" + length + ") returned other bytes than were written");
                }
            }
        }

        private enum Outcome { DONE, REFUSED, OUT_OF_BOUNDS, REMOTE_ERROR }

        /**
         * Runs an operation through a segment and checks its outcome against what the model allows: a long lease
         * nothing ended must work; one the owner ended must not reach the owner's memory.
         */
        private Outcome attempt(Leased l, Runnable operation) {
            boolean ended = l.expected != null || !l.ownerActive();
            Outcome outcome;
            try {
                operation.run();
                outcome = Outcome.DONE;
            } catch (IndexOutOfBoundsException e) {
                outcome = Outcome.OUT_OF_BOUNDS;
            } catch (IllegalStateException e) {
                outcome = Outcome.REFUSED;
            } catch (WorkCompletionException e) {
                check(e.status() == WcStatus.REM_ACCESS_ERR || e.status() == WcStatus.WR_FLUSH_ERR,
                        l + ": completion " + e.status());
                outcome = Outcome.REMOTE_ERROR;
            }
            note("  " + l + ": " + outcome);
            if (outcome == Outcome.OUT_OF_BOUNDS) return outcome;
            if (mustWork(l)) check(outcome == Outcome.DONE, l + " is a live long lease, yet the operation was " + outcome);
            if (ended) check(outcome != Outcome.DONE, l + " had ended at the owner, yet the operation succeeded");
            if (outcome == Outcome.REMOTE_ERROR) {
                check(!l.ownerActive() || l.shortLived, "REM_ACCESS_ERR through the active lease " + l);
                recover();
            }
            return outcome;
        }

        private void release(Release op) {
            Leased l = pickWithSegment(op.pick());
            if (l == null) return;
            ran(op);
            boolean live = l.generation == generation && requester.lostReason() == null;
            if (live && l.expected == null) l.ending(EndReason.RELEASED);
            l.segment.close();
            l.closed = true;
            if (live && l.owner != null && !l.everShort) {
                check(l.owner.ended().isDone(), "RELEASE_ACK arrived before " + l + " ended at the owner");
            } else if (live && l.owner != null) { // it may be expiring: the owner forgets it just before it has ended
                awaitTrue(() -> l.owner.ended().isDone(), l + " to end");
            }
        }

        private void expire(Expire op) {
            Leased l = pick(leases.stream().filter(x -> x.shortLived && x.ownerActive()).toList(), op.pick());
            if (l == null) return;
            ran(op);
            awaitTrue(() -> l.owner.ended().isDone(), l + " to expire");
        }

        private void renew(Renew op) {
            Leased l = pickWithSegment(op.pick());
            if (l == null) return;
            ran(op);
            Duration duration = op.tooLong() ? LONG.plusSeconds(1) : LONG;
            try {
                l.segment.renew(duration);
                check(!op.tooLong(), "renewal of " + l + " beyond the owner's limit was accepted");
                check(l.expected == null && l.generation == generation, "renewal of the ended " + l + " was accepted");
                l.shortLived = false;
                note("  renewed " + l);
            } catch (LeaseRefusedException | IllegalStateException e) {
                check(op.tooLong() || !mustWork(l), "renewal of the live " + l + " was refused: " + e.getMessage());
            }
        }

        private void drop(Drop op) {
            Leased l = pickWithSegment(op.pick());
            if (l == null) return;
            ran(op);
            // A segment whose session has ended was closed by that end: dropping it is no leak.
            boolean sessionAlive = l.generation == generation && requester.lostReason() == null;
            boolean live = sessionAlive && l.expected == null;
            if (live) l.ending(EndReason.RELEASED);
            l.segment = null; // the only reference: the graph's Cleaner must send RELEASE
            if (!sessionAlive) return;
            dropped++;
            awaitTrue(() -> {
                System.gc();
                return leakedSegments() >= dropped && (!live || l.owner == null || l.owner.ended().isDone());
            }, "the Cleaner to report and release " + l);
        }

        private long leakedSegments() {
            return requesters.stream().mapToLong(RdmaSession::leakedSegments).sum();
        }

        /** Ends a lease at the owner; an ended one again, which must change nothing ({@code close()} is idempotent). */
        private void ownerEnd(OwnerEnd op) {
            Leased l = pick(leases.stream().filter(x -> x.owner != null).toList(), op.pick());
            if (l == null) return;
            ran(op);
            if (l.ownerActive()) l.ending(EndReason.RELEASED);
            l.owner.close();
            check(l.owner.ended().isDone(), l + " has not ended when close() returned");
        }

        private void stray(Stray op) {
            List<Leased> targets = leases.stream().filter(l -> op.pastEnd() ? l.ownerActive() && l.expected == null
                    : l.owner != null && l.owner.ended().isDone()).toList();
            Leased l = pick(targets, op.pick());
            if (l == null || requester.lostReason() != null) return;
            ran(op);
            long address = op.pastEnd() ? l.address + l.length : l.address + op.offset() % l.length;
            int length = op.pastEnd() ? 1 + op.offset() % 64 : 1 + op.offset() % (l.length - (int) (address - l.address));
            if (op.pastEnd()) l.ending(EndReason.SESSION_LOST);
            try (Block local = requesterArena.allocateShared(length, 8)) {
                local.segment().fill((byte) 0x5a);
                WorkRequest wr = op.read() ? WorkRequest.read(local.region(), local.regionOffset(), length)
                        : WorkRequest.write(local.region(), local.regionOffset(), length);
                WcStatus status;
                try {
                    status = requester.queuePair().postAsync(wr.remote(address, l.rkey)).join().status();
                } catch (CompletionException e) {
                    status = e.getCause() instanceof WorkCompletionException w ? w.status() : null;
                }
                check(status == WcStatus.REM_ACCESS_ERR, "a stray " + (op.read() ? "READ" : "WRITE") + " of "
                        + length + " B at 0x" + Long.toHexString(address) + " through " + l + "'s key: " + status);
            }
            recover();
        }

        private void kill() {
            ran(new Kill());
            note("  requester session closed");
            for (Leased l : leases) if (l.generation == generation && l.ownerActive()) l.ending(EndReason.SESSION_LOST);
            requester.close();
            recover();
        }

        /** After a lost session: waits until the owner revoked every lease of it, then connects a new pair. */
        private void recover() {
            RdmaSession lostOwner = owner;
            // Every lease of the session that nothing else ended (earlier ends were checked after their step).
            for (Leased l : leases) if (l.generation == generation) l.ending(EndReason.SESSION_LOST);
            awaitTrue(() -> lostOwner.lostReason() != null, "the owner to see the session lost");
            awaitTrue(() -> leases.stream().noneMatch(l -> l.generation == generation && l.ownerActive()),
                    "the owner to revoke every lease of the lost session");
            requester.close();
            owner.close();
            connect();
        }

        private void filler(Filler op) {
            if (fillers.size() >= 24) return;
            ran(op);
            byte[] image = new byte[op.size()];
            new SplittableRandom(op.seed()).nextBytes(image);
            Block b = ownerArena.allocateShared(op.size(), 8);
            b.segment().copyFrom(MemorySegment.ofArray(image));
            fillers.add(new FillerBlock("F" + step, b, image));
            note("  F" + step + " at 0x" + Long.toHexString(b.address()));
        }

        private void freeFiller(FreeFiller op) {
            FillerBlock f = pick(fillers, op.pick());
            if (f == null) return;
            ran(op);
            fillers.remove(f);
            f.block().close();
        }

        /**
         * Races an owner-side end with stray writes through the lease: a block given back to the arena before its
         * window is invalidated would be handed to the fillers allocated right after, and a write would land there.
         */
        private void race(Race op) {
            Leased l = pick(leases.stream().filter(x -> x.ownerActive() && x.expected == null && !x.shortLived
                    && x.generation == generation).toList(), op.pick());
            if (l == null || requester.lostReason() != null) return;
            ran(op);
            l.ending(EndReason.RELEASED);
            int length = Math.min(l.length, 64);
            try (Block local = requesterArena.allocateShared(length, 8)) {
                local.segment().fill((byte) 0x6b);
                var closed = new java.util.concurrent.atomic.AtomicBoolean();
                Workers.runTogether(2, thread -> {
                    if (thread == 0) {
                        while (true) { // until a write fails; one posted after close() returned must fail
                            boolean after = closed.get();
                            try {
                                requester.queuePair().postAsync(WorkRequest.write(local.region(), local.regionOffset(),
                                        length).remote(l.address, l.rkey)).join();
                            } catch (RuntimeException e) { // failed (CompletionException) or refused: revoked,
                                return;                      // and the QPs are in ERROR now
                            }
                            if (after) throw new AssertionError("a write through " + l + " posted after the owner's"
                                    + " close() returned succeeded");
                        }
                    } else {
                        l.owner.close();
                        closed.set(true);
                        for (int i = 0; i < 4 && fillers.size() < 32; i++) {
                            byte[] image = new byte[l.length];
                            new SplittableRandom(step * 31L + i).nextBytes(image);
                            Block b = ownerArena.allocateShared(l.length, 8);
                            b.segment().copyFrom(MemorySegment.ofArray(image));
                            fillers.add(new FillerBlock("R" + step + "." + i, b, image));
                        }
                    }
                });
            }
            recover();
        }

        private void drain(Drain op) {
            Leased l = pick(leases.stream().filter(x -> x.ownerActive() && x.expected == null && !x.shortLived
                    && x.generation == generation).toList(), op.pick());
            if (l == null) return;
            ran(op);
            l.ending(EndReason.RELEASED);
            Block block = l.owner.block();
            CompletableFuture<WorkCompletion> receive = l.owner.postAsync(ownerLocal,
                    ReceiveRequest.into(block.region(), block.regionOffset(), l.length));
            CompletableFuture<Void> end = owner.leases().end(l.owner, EndReason.RELEASED);
            for (int i = 0; i < 8 && fillers.size() < 32; i++) {
                byte[] image = new byte[l.length];
                new SplittableRandom(step * 17L + i).nextBytes(image);
                Block b = ownerArena.allocateShared(l.length, 8);
                b.segment().copyFrom(MemorySegment.ofArray(image));
                fillers.add(new FillerBlock("D" + step + "." + i, b, image));
                check(b.address() != l.address, "the block of " + l + " was handed out again while the owner's receive"
                        + " into it was in flight");
            }
            check(block.isOpen() && !end.isDone(), l + " ended while the owner's receive into its block was in flight");
            WcStatus sent = sender.postAsync(WorkRequest.send(sendSource.region(), sendSource.regionOffset(), l.length))
                    .orTimeout(10, TimeUnit.SECONDS).join().status();
            check(sent == WcStatus.SUCCESS && receive.orTimeout(10, TimeUnit.SECONDS).join().isSuccess(),
                    "the owner's receive into " + l + " failed");
            end.orTimeout(10, TimeUnit.SECONDS).join();
            check(!block.isOpen(), "the block of " + l + " was not given back after the drain");
        }

        // ---- checks ----

        /** Every live lease's block and every filler equals the model; every ended lease ended as allowed. */
        private void verify() {
            check(owner.lostReason() == null && requester.lostReason() == null, "a session was lost unprovoked: "
                    + owner.lostReason() + " / " + requester.lostReason());
            for (Leased l : leases) {
                if (l.owner == null) continue;
                if (l.ownerActive()) {
                    byte[] now = snapshot(l.owner);
                    if (now != null && l.ownerActive() && !java.util.Arrays.equals(now, l.image)) {
                        throw failure(l + " changed outside what its lease wrote: " + firstDifference(now, l.image));
                    }
                } else {
                    EndReason reason = l.owner.ended().join();
                    check(l.allowed().contains(reason), l + " ended " + reason + ", allowed " + l.allowed());
                }
            }
            for (FillerBlock f : fillers) {
                byte[] now = f.block().segment().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
                if (!java.util.Arrays.equals(now, f.image())) {
                    throw failure("filler " + f.name() + " at 0x" + Long.toHexString(f.block().address()) + " changed: "
                            + firstDifference(now, f.image()));
                }
            }
        }

        private static String firstDifference(byte[] now, byte[] expected) {
            int i = java.util.Arrays.mismatch(now, expected);
            return "byte " + i + " is " + now[i] + ", expected " + expected[i];
        }

        /**
         * Ends everything: the owner closes first (OWNER_CLOSED for what is left), then every lease must have ended
         * once as allowed, the owners' counters must equal the ends observed, and no block may be left anywhere.
         */
        @Override
        public void close() {
            try {
                for (Leased l : leases) if (l.ownerActive()) l.ending(EndReason.OWNER_CLOSED);
                owner.close();
                requester.close();
                listener.close();
                ownerEndpoint.close(); // and the endpoints' shared receive blocks with them
                requesterEndpoint.close();
                for (Leased l : leases) if (l.segment != null && !l.closed) l.segment.close(); // sessions gone: no-op
                // Every segment dropped while its session lived was reported once as a leak, and no other.
                System.gc();
                long leaked = leakedSegments();
                check(leaked == dropped, leaked + " segments reported as leaked, " + dropped + " dropped");
                Map<EndReason, Integer> ends = new EnumMap<>(EndReason.class);
                for (Leased l : leases) {
                    if (l.owner == null) {
                        ends.merge(EndReason.EXPIRED, 1, Integer::sum); // ended before the requester looked it up
                        continue;
                    }
                    check(l.owner.ended().isDone(), l + " never ended");
                    check(!l.owner.block().isOpen(), l + " ended but its block was never given back");
                    EndReason reason = l.owner.ended().join();
                    check(l.allowed().contains(reason), l + " ended " + reason + ", allowed " + l.allowed());
                    ends.merge(reason, 1, Integer::sum);
                }
                long g = 0, released = 0, expired = 0, revoked = 0, active = 0, bytes = 0;
                for (LeaseManager m : managers) {
                    LeaseStats s = m.stats();
                    g += s.granted();
                    released += s.released();
                    expired += s.expired();
                    revoked += s.revoked();
                    active += s.active();
                    bytes += s.activeBytes();
                }
                check(g == granted, "owners granted " + g + " leases, the requester got " + granted);
                check(active == 0 && bytes == 0, active + " leases (" + bytes + " B) still active");
                int others = ends.getOrDefault(EndReason.DONE, 0) + ends.getOrDefault(EndReason.SESSION_LOST, 0)
                        + ends.getOrDefault(EndReason.OWNER_CLOSED, 0);
                check(released == ends.getOrDefault(EndReason.RELEASED, 0) && expired == ends.getOrDefault(EndReason.EXPIRED, 0)
                        && revoked == others, "counted released/expired/revoked " + released + "/" + expired + "/"
                        + revoked + ", observed " + ends);
                fillers.forEach(f -> f.block().close());
                sendSource.close();
                ownerArena.flushThreadCaches();
                requesterArena.flushThreadCaches();
                check(ownerArena.stats().liveBlocks() == 0, ownerArena.stats().liveBlocks() + " owner blocks never came back");
                check(requesterArena.stats().liveBlocks() == 0, requesterArena.stats().liveBlocks() + " requester blocks left");
            } finally {
                listener.close();
                ownerEndpoint.close();
                requesterEndpoint.close();
                ownerArena.close();
                requesterArena.close();
                graph.close();
            }
            check(graph.failures().isEmpty() && graph.liveCount() == 0, "left behind:\n" + graph.dump());
        }

        // ---- helpers ----

        private void awaitTrue(BooleanSupplier condition, String what) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (!condition.getAsBoolean()) {
                if (System.nanoTime() > deadline) throw failure("waited 15 s for " + what);
                try {
                    Thread.sleep(2);
                } catch (InterruptedException e) {
                    throw failure("interrupted waiting for " + what);
                }
            }
        }

        private <E extends Exception> E expectThrows(Class<E> type, Runnable call) {
            try {
                call.run();
            } catch (Exception e) {
                if (type.isInstance(e)) return type.cast(e);
                throw failure("threw " + e + " instead of " + type.getSimpleName());
            }
            throw failure("did not throw " + type.getSimpleName());
        }

        private void note(String line) {
            trace.add("#" + step + " " + line);
        }

        private void check(boolean ok, String message) {
            if (!ok) throw failure(message);
        }

        private AssertionError failure(String message) {
            return new AssertionError("step #" + step + ": " + message + "\nsteps, resolved:\n  "
                    + String.join("\n  ", trace));
        }
    }

    private static <T> T pick(List<T> list, int index) {
        return list.isEmpty() ? null : list.get(index % list.size());
    }
}
