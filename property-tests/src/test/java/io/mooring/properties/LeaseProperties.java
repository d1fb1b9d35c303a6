package io.mooring.properties;

import static org.quicktheories.QuickTheory.qt;
import static org.quicktheories.generators.SourceDSL.lists;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.EndReason;
import io.mooring.lease.Isolation;
import io.mooring.lease.Lease;
import io.mooring.lease.LeaseLimits;
import io.mooring.lease.LeaseEndedException;
import io.mooring.lease.LeaseRefusedException;
import io.mooring.lease.LeaseStats;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import io.mooring.lease.SessionEnd;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.CompletionDispatcher;
import io.mooring.verbs.CompletionQueue;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletion;
import io.mooring.verbs.WorkCompletionException;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.QpCapabilities;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.ToLongFunction;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.quicktheories.api.Pair;
import org.quicktheories.core.Gen;
import org.quicktheories.generators.Generate;

/**
 * Random lease programs between one owner endpoint ({@code soft0}) and three peer endpoints — P0 and P1 on
 * {@code soft0} connecting from 127.0.0.1 (one peer by address: they share one set of limits), P2 on {@code soft1}
 * across the TCP fabric, connecting from ::1 where the host has it (a peer of its own). Peers request leases; the
 * owner keeps <em>stored</em> blocks of its own and offers (parts of) them, one block to several peers at once,
 * read-only or writable; peers write (also one byte past the end), read, renew, release and drop their segments,
 * short leases expire, the owner ends leases and closes stored blocks under live leases, sessions are closed from
 * either side, and peers aim raw accesses through keys that ended, another peer's live key, a read-only key and past
 * a lease's end. Two steps race the owner's end of a lease: a peer's thread writing through it while the owner ends
 * it and allocates blocks that may take its memory, and an owner receive into its block in flight. Fault-free:
 * {@code chaos/} adds the faults.
 *
 * <p>After every step the model checks: no session was lost unprovoked; every lease the model holds live is live
 * at the owner, every ended one ended once for a reason the program allows; the owner's bytes of every stored block
 * and every live requested block equal the model's image (a block changes only through a WRITE of a live writable
 * lease on it); a READ through every live lease returns the image; and each peer's leases and bytes, as the endpoint
 * counts them, equal the model's and stay within the limits. A request or offer past a peer's limit must be refused
 * with a {@link LeaseRefusedException} naming the limit, and one within it granted — whatever the other peer holds. A
 * raw access outside what a peer was granted must fail with REM_ACCESS_ERR and cost only that peer its session. Short
 * leases may expire at any moment: for them the model accepts either outcome and follows the one observed. At the
 * end: the owner's counters equal the ends observed, every dropped segment was reported once as a leak, every block
 * is back in its arena and the resource graph is empty.
 *
 * <p>{@code -Dmooring.lease.examples=N} raises the number of programs (default {@value #DEFAULT_EXAMPLES});
 * {@code -Dmooring.lease.verbose=true} prints how often each kind of step ran.
 */
class LeaseProperties {
    private static final int DEFAULT_EXAMPLES = 25;
    private static final int EXAMPLES = Integer.getInteger("mooring.lease.examples", DEFAULT_EXAMPLES);
    private static final int MAX_STEPS = 40;
    private static final int PEERS = 3;
    private static final Set<Access> RW = EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE);
    private static final Set<Access> READ_ONLY = EnumSet.of(Access.REMOTE_READ);
    private static final Duration LONG = Duration.ofSeconds(60);
    /** How long a loss or an end may take to be seen (none took 2 s in 60 programs; slack for a loaded host). */
    private static final Duration WAIT = Duration.ofSeconds(15);
    /** Small, so that programs reach them: 4 leases or 8 KiB per peer. */
    private static final LeaseLimits LIMITS = LeaseLimits.builder().maxBytes(8 << 10).maxLeases(4)
            .maxDuration(LONG).maxLifetime(Duration.ofMinutes(10))
            .maxAccess(RW).grace(Duration.ofMillis(50)).build();

    /**
     * Sessions lost and segments dropped on purpose are logged as warnings (the graph reports each dropped segment as a
     * leak): kept out of the build output, since the model checks every such outcome itself.
     */
    private final Logger leaseLog = Logger.getLogger(RdmaSession.class.getPackageName());
    private final Logger graphLog = Logger.getLogger(ResourceGraph.class.getPackageName());
    private Level leaseLevel;
    private Level graphLevel;

    @BeforeEach
    void quiet() {
        leaseLevel = leaseLog.getLevel();
        graphLevel = graphLog.getLevel();
        leaseLog.setLevel(Level.OFF);
        graphLog.setLevel(Level.OFF);
    }

    @AfterEach
    void restore() {
        leaseLog.setLevel(leaseLevel);
        graphLog.setLevel(graphLevel);
    }

    /** Steps that did something, per kind, over all programs: each kind must have run. */
    private static final Map<String, Integer> RAN = new ConcurrentHashMap<>();

    @Test
    void peersReachExactlyWhatTheyWereGrantedWithinTheirLimits() {
        qt().withExamples(EXAMPLES).withShrinkCycles(100).forAll(programs()).checkAssert(program -> {
            try (var run = new Run(program.isolation())) {
                run.execute(program.steps());
            }
        });
        // Stray targets (counted too) are not required: one needs a live read-only lease at the right moment.
        Stream.concat(Stream.of(Step.class.getPermittedSubclasses()).map(Class::getSimpleName), Stream.of(REFUSAL))
                .filter(kind -> RAN.getOrDefault(kind, 0) == 0).findFirst().ifPresent(kind -> {
                    throw new AssertionError("no " + kind + " step ever ran: " + RAN);
                });
        if (Boolean.getBoolean("mooring.lease.verbose")) System.out.println("steps run: " + RAN);
    }

    // ---- the programs ------------------------------------------------------------------------------------------

    /** One program; shown one step per line when it fails (QuickTheories prints the shrunk one). */
    record Program(Isolation isolation, List<Step> steps) {
        @Override
        public String toString() {
            return isolation + ":\n  " + String.join("\n  ", IntStream.range(0, steps.size())
                    .mapToObj(i -> "#" + (i + 1) + " " + steps.get(i)).toList());
        }
    }

    /**
     * One step. {@code peer} is 0..2; {@code pick} and {@code stored} choose, modulo their number, among the leases
     * or stored blocks that exist when the step runs.
     */
    sealed interface Step permits Request, Store, Offer, Write, Read, Renew, Release, Expire, OwnerEnd, CloseStored,
            Drop, Disconnect, Stray, Race, Drain {}

    enum Term { LONG, SHORT, TOO_LONG }

    /** A peer asks for {@code size} bytes: for a minute, for 300 ms + {@code shortMillis}, or past the limit. */
    record Request(int peer, int size, Term term, int shortMillis) implements Step {}

    /** The owner allocates a block of its own (a stored value) and fills it from {@code seed}. */
    record Store(int size, int seed) implements Step {}

    /**
     * The owner offers {@code part} of a stored block to each peer in {@code peers} (a bit mask): several peers at once
     * share the block.
     */
    record Offer(int stored, int peers, boolean readOnly, boolean isShort, Part part) implements Step {}

    /** Where an offer starts in the block and how long it is, modulo the block's size; {@link #WHOLE}: all of it. */
    record Part(int from, int length) {
        static final Part WHOLE = new Part(0, 0);

        @Override
        public String toString() {
            return equals(WHOLE) ? "whole" : "[" + from + ", +" + length + ")";
        }
    }

    /** Writes through a segment: inside it, or ({@code outside}) reaching one byte past its end. */
    record Write(int pick, int offset, int length, boolean outside, int seed) implements Step {}

    record Read(int pick, int offset, int length) implements Step {}

    /** Renews for a minute, or for longer than the owner allows. */
    record Renew(int pick, boolean tooLong) implements Step {}

    /** The peer closes its segment (RELEASE, waits for the owner's acknowledgement). */
    record Release(int pick) implements Step {}

    /** Waits until a short lease nothing else ended has expired at the owner (it may have already). */
    record Expire(int pick) implements Step {}

    /** The owner ends a lease itself ({@link Lease#close()}): the peer is not told. */
    record OwnerEnd(int pick) implements Step {}

    /** The owner closes a stored block: its live leases end (the peers are told), then its memory is freed. */
    record CloseStored(int stored) implements Step {}

    /** The peer drops a segment without closing it: the Cleaner must report and release it. */
    record Drop(int pick) implements Step {}

    /** The peer's session is closed by the peer, or by the owner; the peer connects again. */
    record Disconnect(int peer, boolean byOwner) implements Step {}

    enum Target { ENDED_KEY, OTHER_PEERS_KEY, READ_ONLY_KEY, PAST_END }

    /**
     * A raw WRITE or READ on a peer's data QP outside what it was granted (through a read-only key: a WRITE); it costs
     * that peer its session.
     */
    record Stray(int peer, Target target, int pick, boolean read) implements Step {}

    /**
     * A peer's thread keeps writing through a live requested lease while the owner ends it and allocates blocks: a
     * block given back before its key is revoked would go to those blocks, and a write would land there.
     */
    record Race(int pick) implements Step {}

    /**
     * The owner posts a receive into a requested lease's block (through the lease, on a QP of its own) and ends the
     * lease: until a SEND fills the receive the block must stay out of the arena — blocks allocated meanwhile must not
     * get it — and the SEND must land in it.
     */
    record Drain(int pick) implements Step {}

    /** Programs start with a stored block and a request, so that the steps acting on one have something to act on. */
    private static Gen<Program> programs() {
        Gen<List<Step>> head = Generate.range(1, 2048).zip(Generate.range(0, 1 << 20),
                (size, seed) -> List.<Step>of(new Store(size, seed), new Request(0, size, Term.LONG, 0)));
        Gen<List<Step>> steps = head.zip(lists().of(steps()).ofSizeBetween(MAX_STEPS / 4, MAX_STEPS - 2),
                (h, rest) -> Stream.concat(h.stream(), rest.stream()).toList());
        return Generate.pick(List.of(Isolation.WINDOW, Isolation.DEDICATED_REGISTRATION)).zip(steps, Program::new);
    }

    private static Gen<Step> steps() {
        Gen<Integer> peer = Generate.range(0, PEERS - 1);
        Gen<Integer> index = Generate.range(0, 99);
        Gen<Integer> size = Generate.frequency(List.of(Pair.of(4, Generate.range(1, 512)),
                Pair.of(1, Generate.range(513, 6144))));
        Gen<Term> term = Generate.frequency(List.of(Pair.of(5, Generate.constant(Term.LONG)),
                Pair.of(4, Generate.constant(Term.SHORT)), Pair.of(1, Generate.constant(Term.TOO_LONG))));
        Gen<Boolean> rarely = Generate.frequency(List.of(Pair.of(1, Generate.constant(true)),
                Pair.of(4, Generate.constant(false))));
        Gen<Step> request = peer.zip(size, term, Generate.range(0, 100), Request::new);
        Gen<Step> store = size.zip(Generate.range(0, 1 << 20), Store::new);
        Gen<Part> part = Generate.frequency(List.of(Pair.of(2, Generate.constant(Part.WHOLE)),
                Pair.of(1, index.zip(Generate.range(1, 99), Part::new))));
        Gen<Step> offer = index.zip(Generate.range(1, (1 << PEERS) - 1), Generate.booleans(), rarely, part, Offer::new);
        Gen<Step> write = index.zip(Generate.range(0, 8191), Generate.range(0, 8191), rarely, Generate.range(0, 1 << 20),
                Write::new);
        Gen<Step> read = index.zip(Generate.range(0, 8191), Generate.range(0, 8191), Read::new);
        Gen<Step> stray = peer.zip(Generate.enumValues(Target.class), index, Generate.booleans(), Stray::new);
        return Generate.frequency(List.of(
                Pair.of(6, request), Pair.of(2, store), Pair.of(5, offer), Pair.of(6, write), Pair.of(3, read),
                Pair.of(2, index.zip(rarely, Renew::new)), Pair.of(3, index.map(Release::new)),
                Pair.of(4, index.map(Expire::new)), Pair.of(2, index.map(OwnerEnd::new)),
                Pair.of(2, index.map(CloseStored::new)), Pair.of(2, index.map(Drop::new)),
                Pair.of(2, peer.zip(Generate.booleans(), Disconnect::new)), Pair.of(3, stray),
                Pair.of(3, index.map(Race::new)), Pair.of(3, index.map(Drain::new))));
    }

    private static final String REFUSAL = "refusal at a limit";

    private static void ran(Step step) {
        ran(step.getClass().getSimpleName());
    }

    private static void ran(String kind) {
        RAN.merge(kind, 1, Integer::sum);
    }

    // ---- the model ---------------------------------------------------------------------------------------------

    /** A block of the owner's own, offered to peers: its bytes change only through WRITEs of its live leases. */
    private static final class Stored {
        final String name;
        final Block block;
        final byte[] image;
        boolean closed;

        Stored(String name, Block block, byte[] image) {
            this.name = name;
            this.block = block;
            this.image = image;
        }

        @Override
        public String toString() {
            return name + "(" + image.length + " B)";
        }
    }

    /** One lease a peer was granted, as the model knows it. */
    private static final class Held {
        final String name;
        final Peer peer;
        final int generation;       // which session of the peer's it was granted over
        final Lease lease;          // the owner's side; null if a short one ended before it could be looked up
        final Stored stored;        // the offered block; null for a requested one (which the lease owns)
        final byte[] image;         // the bytes the lease exposes start at image[base]
        final int base;
        final int length;
        final boolean writable;
        final boolean everShort;
        final long id;
        final long address;
        final int rkey;
        RemoteSegment segment;      // null once dropped
        boolean closed;             // the peer closed its segment
        boolean shortLived;
        EnumSet<EndReason> expected; // the ends a step of ours allows; null while nothing of ours ended it

        Held(String name, Peer peer, RemoteSegment segment, Lease lease, Stored stored, byte[] image, int base,
             boolean writable, boolean shortLived) {
            this.name = name;
            this.peer = peer;
            this.generation = peer.generation;
            this.segment = segment;
            this.lease = lease;
            this.stored = stored;
            this.image = image;
            this.base = base;
            this.length = (int) segment.length();
            this.writable = writable;
            this.everShort = shortLived;
            this.shortLived = shortLived;
            this.id = segment.leaseId();
            this.address = segment.address();
            this.rkey = segment.rkey();
        }

        boolean ownerActive() {
            return lease != null && !lease.ended().isDone();
        }

        /** A long lease nothing has ended, over the peer's current session: everything it permits must work. */
        boolean mustWork() {
            return !shortLived && expected == null && generation == peer.generation;
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
            return name + "(" + peer.name + ", lease " + id + ", " + length + " B"
                    + (stored != null ? " of " + stored.name + " at " + base : "") + (writable ? "" : ", read-only")
                    + (shortLived ? ", short" : "") + ")";
        }
    }

    /** A peer endpoint and its current session (and the owner's side of it). */
    private static final class Peer {
        final String name;
        final ProtectionDomain pd;
        final RdmaArena arena;
        final RdmaEndpoint endpoint;
        final RdmaListener listener; // the owner's listener this peer connects to
        final List<RdmaSession> sessions = new ArrayList<>();
        RdmaSession session;
        RdmaSession ownerSide;
        int generation;

        Peer(String name, ProtectionDomain pd, RdmaArena arena, RdmaEndpoint endpoint, RdmaListener listener) {
            this.name = name;
            this.pd = pd;
            this.arena = arena;
            this.endpoint = endpoint;
            this.listener = listener;
        }

        /** The peer as the owner's endpoint counts it: the address it connects from. */
        InetAddress address() {
            return ((InetSocketAddress) ownerSide.peerAddress()).getAddress();
        }
    }

    private static final class Run implements AutoCloseable {
        private final ResourceGraph graph = ResourceGraph.builder().name("lease-properties").build();
        private final RdmaArena ownerArena;
        private final RdmaEndpoint ownerEndpoint;
        private final List<Peer> peers = new ArrayList<>();
        private final List<RdmaArena> arenas = new ArrayList<>();
        private final List<RdmaSession> ownerSides = new ArrayList<>();
        private final QueuePair ownerLocal; // the owner's own QP (not a session's), for Drain
        private final QueuePair sender;     // its peer, on P2's device
        private final Block sendSource;
        private final List<Held> held = new ArrayList<>();
        private final List<Stored> stored = new ArrayList<>();
        private final List<String> trace = new ArrayList<>();
        /** The address of a lease whose block is allocated for it: no other lease holds its range. */
        private static final long FRESH = -1;
        private long granted;
        private int probes; // leases granted and released at once by otherPeerUnaffected
        private long dropped;
        private int step;

        Run(Isolation isolation) {
            ProtectionDomain ownerPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
            ownerArena = arena(ownerPd);
            // Peers lose sessions on purpose and come back at once: no backoff.
            ownerEndpoint = RdmaEndpoint.builder(ownerPd, ownerArena).limits(LIMITS).isolation(isolation)
                    .failureBackoff(Duration.ZERO).build();
            RdmaListener v4 = listen(InetAddress.getLoopbackAddress());
            RdmaListener v6 = ipv6Loopback();
            for (int i = 0; i < PEERS; i++) {
                boolean last = i == PEERS - 1;
                ProtectionDomain pd = RdmaDevices.open(last ? "soft:soft1" : "soft:soft0", graph)
                        .allocateProtectionDomain();
                RdmaArena arena = arena(pd);
                var endpoint = RdmaEndpoint.builder(pd, arena).isolation(isolation).build();
                peers.add(new Peer("P" + i, pd, arena, endpoint, last && v6 != null ? v6 : v4));
            }
            peers.forEach(this::connect);
            Peer last = peers.get(PEERS - 1);
            ownerLocal = queuePair(ownerPd);
            sender = queuePair(last.pd);
            ownerLocal.connect(sender.info());
            sender.connect(ownerLocal.info());
            sendSource = last.arena.allocateShared(8192, 8);
            sendSource.segment().fill((byte) 0x3c);
        }

        private static QueuePair queuePair(ProtectionDomain pd) {
            CompletionQueue cq = pd.context().createCompletionQueue(64);
            cq.startDispatcher(CompletionDispatcher.Mode.EVENTS, wc -> {});
            return pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
        }

        private RdmaArena arena(ProtectionDomain pd) {
            RdmaArena arena = RdmaArena.builder(pd).chunkSize(1 << 20).shards(1)
                    .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
            arenas.add(arena);
            return arena;
        }

        private RdmaListener listen(InetAddress address) {
            try {
                return ownerEndpoint.listen(new InetSocketAddress(address, 0)); // closed with the endpoint
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }

        /** A listener on ::1, or null where the host has no IPv6 loopback (then all peers are one by address). */
        private RdmaListener ipv6Loopback() {
            try {
                return listen(InetAddress.getByName("::1"));
            } catch (IllegalStateException | IOException e) {
                return null;
            }
        }

        private void connect(Peer p) {
            p.generation++;
            var accepted = p.listener.acceptAsync();
            p.session = p.endpoint.connectAsync(p.listener.address()).join();
            p.ownerSide = accepted.join();
            p.sessions.add(p.session);
            ownerSides.add(p.ownerSide);
            note(p.name + " session " + p.generation + " from " + p.address().getHostAddress());
        }

        void execute(List<Step> program) {
            for (Step s : program) {
                step++;
                note(s.toString());
                switch (s) {
                    case Request r -> request(r);
                    case Store st -> store(st);
                    case Offer o -> offer(o);
                    case Write w -> write(w);
                    case Read r -> read(r);
                    case Renew r -> renew(r);
                    case Release r -> release(r);
                    case Expire e -> expire(e);
                    case OwnerEnd e -> ownerEnd(e);
                    case CloseStored c -> closeStored(c);
                    case Drop d -> drop(d);
                    case Disconnect d -> disconnect(d);
                    case Stray st -> stray(st);
                    case Race r -> race(r);
                    case Drain d -> drain(d);
                }
                verify();
            }
        }

        // ---- steps ----

        private void request(Request op) {
            ran(op);
            Peer p = peers.get(op.peer());
            Duration duration = switch (op.term()) {
                case LONG -> LONG;
                case SHORT -> Duration.ofMillis(300 + op.shortMillis());
                case TOO_LONG -> LONG.plusSeconds(1);
            };
            Limit limit = op.term() == Term.TOO_LONG ? Limit.DURATION : limitReached(p, FRESH, op.size());
            RemoteSegment segment;
            try {
                segment = p.session.requestRemote(op.size(), duration, RW);
            } catch (LeaseRefusedException e) {
                refused(p, limit, e);
                return;
            }
            check(limit == Limit.NONE || limit == Limit.UNCERTAIN, p.name + " was granted " + op.size()
                    + " B past its " + limit + " limit, holding " + ownerEndpoint.usage(p.address()));
            granted++;
            Lease lease = p.ownerSide.leases().lease(segment.leaseId());
            boolean isShort = op.term() == Term.SHORT;
            check(lease != null || isShort, "lease " + segment.leaseId() + " is not active at the owner after GRANT");
            byte[] image = lease == null ? null : snapshot(lease.block());
            check(lease == null || lease.address() == segment.address() && lease.rkey() == segment.rkey()
                    && lease.length() == op.size(), "GRANT " + segment + " disagrees with the owner's " + lease);
            var h = new Held("L" + held.size(), p, segment, lease, null, image == null ? new byte[op.size()] : image,
                    0, true, isShort);
            held.add(h);
            note("  granted " + h + " at 0x" + Long.toHexString(h.address));
        }

        private void store(Store op) {
            if (stored.stream().filter(s -> !s.closed).count() >= 6) return;
            ran(op);
            storeLike(op.size(), "S" + stored.size(), op.seed());
        }

        /** A block of the owner's filled from {@code seed}, which the model checks from now on. */
        private Stored storeLike(int size, String name, long seed) {
            byte[] image = new byte[size];
            new SplittableRandom(seed).nextBytes(image);
            Block b = ownerArena.allocateShared(size, 8);
            b.segment().copyFrom(MemorySegment.ofArray(image));
            var s = new Stored(name, b, image);
            stored.add(s);
            note("  " + s + " at 0x" + Long.toHexString(b.address()));
            return s;
        }

        private void offer(Offer op) {
            Stored s = pick(stored.stream().filter(x -> !x.closed).toList(), op.stored());
            if (s == null) return;
            ran(op);
            int from = op.part().from() % s.image.length;
            int length = op.part().length() == 0 ? s.image.length - from
                    : 1 + op.part().length() % (s.image.length - from);
            Set<Access> access = op.readOnly() ? READ_ONLY : RW;
            Duration duration = op.isShort() ? Duration.ofMillis(300 + op.part().length()) : LONG;
            for (int i = 0; i < PEERS; i++) {
                if ((op.peers() & 1 << i) == 0) continue;
                Peer p = peers.get(i);
                Limit limit = limitReached(p, s.block.address() + from, length);
                Lease lease;
                try {
                    lease = p.ownerSide.offer(s.block, from, length, duration, access);
                } catch (LeaseRefusedException e) {
                    refused(p, limit, e);
                    continue;
                }
                check(limit == Limit.NONE || limit == Limit.UNCERTAIN, "an offer of " + length + " B to "
                        + p.name + " was granted past its " + limit + " limit");
                granted++;
                RemoteSegment segment;
                try {
                    segment = p.session.receiveOffer(WAIT);
                } catch (io.mooring.lifecycle.MooringTimeoutException e) {
                    throw failure("the offer of lease " + lease.id() + " never reached " + p.name);
                }
                check(segment.leaseId() == lease.id() && segment.address() == lease.address()
                        && segment.rkey() == lease.rkey() && segment.length() == length,
                        "the offer " + segment + " is not the owner's " + lease);
                var h = new Held("L" + held.size(), p, segment, lease, s, s.image, from, !op.readOnly(), op.isShort());
                held.add(h);
                note("  offered " + h);
            }
        }

        /**
         * Which limit a new lease of {@code bytes} for {@code p} reaches, as far as the model knows: SOME if even the
         * leases certain to be live reach one, but short ones that may have expired decide which; UNCERTAIN if only
         * those make the difference (then either answer is right).
         */
        private enum Limit { NONE, LEASES, BYTES, DURATION, SOME, UNCERTAIN }

        /**
         * {@code bytes} at {@code address} ({@link #FRESH}: a block allocated for the lease): a range the peer already
         * holds through another lease adds no bytes, as the endpoint counts them.
         */
        private Limit limitReached(Peer p, long address, long bytes) {
            InetAddress account = p.address();
            List<Held> mine = held.stream().filter(h -> h.ownerActive() && h.peer.address().equals(account)).toList();
            List<Held> sure = mine.stream().filter(h -> !h.shortLived).toList();
            long moreSure = holds(sure, address, bytes) ? 0 : bytes;
            long moreMine = holds(mine, address, bytes) ? 0 : bytes;
            boolean full = sure.size() >= LIMITS.maxLeases() || bytesOf(sure) + moreSure > LIMITS.maxBytes();
            if (full && sure.size() < mine.size()) return Limit.SOME;
            if (sure.size() >= LIMITS.maxLeases()) return Limit.LEASES;
            if (bytesOf(sure) + moreSure > LIMITS.maxBytes()) return Limit.BYTES;
            boolean fits = mine.size() < LIMITS.maxLeases() && bytesOf(mine) + moreMine <= LIMITS.maxBytes();
            return fits ? Limit.NONE : Limit.UNCERTAIN;
        }

        private static boolean holds(List<Held> leases, long address, long bytes) {
            return leases.stream().anyMatch(h -> h.address == address && h.length == bytes);
        }

        /** The bytes of the distinct ranges leased: the same range over several leases counts once. */
        private static long bytesOf(List<Held> leases) {
            return leases.stream().map(h -> new Range(h.address, h.length)).distinct().mapToLong(Range::length).sum();
        }

        private record Range(long address, long length) {}

        /** A refusal is right only past a limit, and names it; the session goes on. */
        private void refused(Peer p, Limit limit, LeaseRefusedException e) {
            note("  refused: " + e.getMessage());
            if (limit != Limit.DURATION) ran(REFUSAL);
            check(limit != Limit.NONE, p.name + " was refused within its limits (" + ownerEndpoint.usage(p.address())
                    + "): " + e.getMessage());
            String named = switch (limit) {
                case LEASES -> "limit is " + LIMITS.maxLeases();
                case BYTES -> "limit of " + LIMITS.maxBytes();
                case DURATION -> LIMITS.maxDuration().toString();
                case NONE, SOME, UNCERTAIN -> "limit";
            };
            check(e.getMessage().contains(named), "the refusal does not name the " + limit + " limit (" + named
                    + "): " + e.getMessage());
            if (limit != Limit.DURATION) otherPeerUnaffected(p);
        }

        /** A peer at its limit takes nothing from another: a peer of another address within its own is granted. */
        private void otherPeerUnaffected(Peer full) {
            Peer other = peers.stream().filter(o -> !o.address().equals(full.address())
                    && limitReached(o, FRESH, 1) == Limit.NONE).findFirst().orElse(null);
            if (other == null) return; // all peers are one (no IPv6 loopback), or the other is at its limit too
            RemoteSegment probe = other.session.requestRemote(1, LONG, RW);
            note("  " + other.name + " is granted lease " + probe.leaseId() + " meanwhile, and releases it");
            granted++;
            probe.close();
            probes++;
        }

        private Held pickWithSegment(int pick) {
            return pick(held.stream().filter(h -> h.segment != null && !h.closed).toList(), pick);
        }

        private void write(Write op) {
            Held h = pickWithSegment(op.pick());
            if (h == null) return;
            ran(op);
            int length = 1 + op.length() % (h.length - op.offset() % h.length);
            int offset = op.outside() ? h.length - length + 1 : op.offset() % h.length;
            byte[] data = new byte[length];
            new SplittableRandom(op.seed()).nextBytes(data);
            try (Block src = h.peer.arena.allocate(length)) {
                src.segment().copyFrom(MemorySegment.ofArray(data));
                Outcome outcome = attempt(h, h.writable, () -> h.segment.write(src, offset));
                if (op.outside()) {
                    check(outcome == Outcome.OUT_OF_BOUNDS || outcome == Outcome.REFUSED && !(h.writable && h.mustWork()),
                            "a WRITE past the end of " + h + " was " + outcome);
                    return;
                }
                if (!h.writable) check(outcome != Outcome.DONE, "a WRITE through the read-only " + h + " succeeded");
                if (outcome == Outcome.DONE) System.arraycopy(data, 0, h.image, h.base + offset, length);
            }
        }

        private void read(Read op) {
            Held h = pickWithSegment(op.pick());
            if (h == null) return;
            ran(op);
            int offset = op.offset() % h.length;
            readAndCompare(h, offset, 1 + op.length() % (h.length - offset));
        }

        /** READs {@code [offset, +length)} through the segment; what arrives must be the model's bytes. */
        private void readAndCompare(Held h, int offset, int length) {
            try (Block dst = h.peer.arena.allocate(length)) {
                if (attempt(h, true, () -> h.segment.read(dst, offset)) == Outcome.DONE) {
                    byte[] got = dst.segment().toArray(ValueLayout.JAVA_BYTE);
                    check(Arrays.equals(got, 0, length, h.image, h.base + offset, h.base + offset + length),
                            "a READ through " + h + " [" + offset + ", +" + length + ") returned other bytes than the"
                                    + " model's");
                }
            }
        }

        private enum Outcome { DONE, REFUSED, OUT_OF_BOUNDS, REMOTE_ERROR }

        /**
         * Runs an operation through a segment and checks the outcome: one the lease permits must work while the lease
         * is live and long; nothing may reach the owner through a lease that ended. A remote error costs the peer its
         * session (it connects again).
         */
        private Outcome attempt(Held h, boolean permitted, Runnable operation) {
            boolean ended = h.expected != null || !h.ownerActive();
            Outcome outcome;
            try {
                operation.run();
                outcome = Outcome.DONE;
            } catch (IndexOutOfBoundsException e) {
                outcome = Outcome.OUT_OF_BOUNDS;
            } catch (IllegalStateException | ResourceClosedException | LeaseEndedException e) {
                outcome = Outcome.REFUSED;
            } catch (WorkCompletionException e) {
                check(e.status() == WcStatus.REM_ACCESS_ERR || e.status() == WcStatus.WR_FLUSH_ERR,
                        h + ": completion " + e.status());
                outcome = Outcome.REMOTE_ERROR;
            }
            note("  " + h + ": " + outcome);
            if (outcome == Outcome.OUT_OF_BOUNDS) return outcome;
            if (permitted && h.mustWork()) check(outcome == Outcome.DONE, h + " is live, yet the operation was " + outcome);
            if (ended) check(outcome != Outcome.DONE, h + " had ended at the owner, yet the operation succeeded");
            if (outcome == Outcome.REMOTE_ERROR) {
                check(!h.ownerActive() || h.shortLived, "REM_ACCESS_ERR through the live " + h);
                recover(h.peer);
            }
            return outcome;
        }

        private void renew(Renew op) {
            Held h = pickWithSegment(op.pick());
            if (h == null) return;
            ran(op);
            try {
                h.segment.renew(op.tooLong() ? LONG.plusSeconds(1) : LONG);
                check(!op.tooLong(), "a renewal of " + h + " past the owner's limit was accepted");
                check(h.expected == null && h.generation == h.peer.generation, "a renewal of the ended " + h
                        + " was accepted");
                h.shortLived = false;
                note("  renewed " + h);
            } catch (LeaseRefusedException | LeaseEndedException | ResourceClosedException | IllegalStateException e) {
                check(op.tooLong() || !h.mustWork(), "a renewal of the live " + h + " was refused: " + e.getMessage());
            }
        }

        private void release(Release op) {
            Held h = pickWithSegment(op.pick());
            if (h == null) return;
            ran(op);
            boolean live = h.generation == h.peer.generation;
            if (live) h.ending(EndReason.RELEASED);
            h.segment.close();
            h.closed = true;
            if (live && h.lease != null && !h.everShort) {
                check(h.lease.ended().isDone(), "RELEASE_ACK arrived before " + h + " ended at the owner");
            } else if (live && h.lease != null) { // it may be expiring: the owner forgets it just before it has ended
                awaitTrue(() -> h.lease.ended().isDone(), h + " to end");
            }
        }

        private void expire(Expire op) {
            Held h = pick(held.stream().filter(x -> x.shortLived && x.lease != null && x.expected == null).toList(),
                    op.pick());
            if (h == null) return;
            ran(op);
            awaitTrue(() -> h.lease.ended().isDone(), h + " to expire");
            check(h.lease.ended().join() == EndReason.EXPIRED, h + " ended " + h.lease.ended().join() + ", not EXPIRED");
        }

        private void ownerEnd(OwnerEnd op) {
            Held h = pick(held.stream().filter(x -> x.lease != null).toList(), op.pick());
            if (h == null) return;
            ran(op);
            if (h.ownerActive()) h.ending(EndReason.RELEASED);
            h.lease.close(); // an ended one again: nothing may happen twice
            check(h.lease.ended().isDone(), h + " has not ended when close() returned");
        }

        /**
         * Closes a stored block under its live leases: each ends OWNER_CLOSED, its peer is told (the segment stops
         * being usable), and the block's memory comes back once every lease has ended (checked at the end).
         */
        private void closeStored(CloseStored op) {
            Stored s = pick(stored.stream().filter(x -> !x.closed).toList(), op.stored());
            if (s == null) return;
            ran(op);
            List<Held> live = held.stream().filter(h -> h.stored == s && h.ownerActive()).toList();
            live.forEach(h -> h.ending(EndReason.OWNER_CLOSED));
            s.closed = true;
            s.block.close();
            check(!s.block.isOpen(), s + " is still open after close()");
            for (Held h : live) {
                awaitTrue(() -> h.lease.ended().isDone(), h + " to end with its block " + s);
                if (h.segment != null && !h.closed && h.generation == h.peer.generation) {
                    awaitTrue(() -> !h.segment.isUsable(), h.peer.name + " to learn that " + h + " was revoked");
                }
            }
        }

        private void drop(Drop op) {
            Held h = pickWithSegment(op.pick());
            if (h == null) return;
            ran(op);
            boolean sessionAlive = h.generation == h.peer.generation;
            boolean live = sessionAlive && h.expected == null;
            if (live) h.ending(EndReason.RELEASED);
            h.segment = null; // the only reference: the graph's Cleaner must send RELEASE
            if (!sessionAlive) return; // its session's end closed it: dropping it is no leak
            dropped++;
            awaitTrue(() -> {
                System.gc();
                return leakedSegments() >= dropped && (!live || h.lease == null || h.lease.ended().isDone());
            }, "the Cleaner to report and release " + h);
        }

        private long leakedSegments() {
            return peers.stream().flatMap(p -> p.sessions.stream()).mapToLong(RdmaSession::leakedSegments).sum();
        }

        private void disconnect(Disconnect op) {
            ran(op);
            Peer p = peers.get(op.peer());
            EndReason reason = op.byOwner() ? EndReason.OWNER_CLOSED : EndReason.SESSION_LOST;
            for (Held h : held) if (h.peer == p && h.generation == p.generation) h.ending(reason);
            RdmaSession closer = op.byOwner() ? p.ownerSide : p.session;
            RdmaSession other = op.byOwner() ? p.session : p.ownerSide;
            closer.close();
            awaitTrue(() -> other.closed().isDone(), "the other side of " + p.name + "'s session to see it end");
            // A clean close is an end on both sides, never a loss.
            check(closer.closed().join().how() == SessionEnd.How.CLOSED && other.closed().join().how() == SessionEnd.How.ENDED,
                    "the close of " + p.name + "'s session by " + (op.byOwner() ? "the owner" : "the peer")
                            + " ended it as: " + closer.closed().join() + " / " + other.closed().join());
            recover(p);
        }

        /**
         * A raw access outside a peer's grants: it must fail at the owner and cost that peer alone its session. The
         * intruder is {@code peer} for a key that ended or another peer's key, the holder for its own live key. With no
         * lease to aim at for {@code target}, the next target that has one is taken.
         */
        private void stray(Stray op) {
            Target target = op.target();
            List<Held> targets = targets(target);
            for (int i = 1; targets.isEmpty() && i < Target.values().length; i++) { // the next kind that has one
                target = Target.values()[(op.target().ordinal() + i) % Target.values().length];
                targets = targets(target);
            }
            Held h = pick(targets, op.pick());
            if (h == null) return;
            ran(op);
            ran("Stray " + target);
            Peer intruder = switch (target) {
                case ENDED_KEY -> peers.get(op.peer());
                case OTHER_PEERS_KEY -> peers.get(h.peer == peers.get(op.peer()) ? (op.peer() + 1) % PEERS : op.peer());
                case READ_ONLY_KEY, PAST_END -> h.peer;
            };
            note("  by " + intruder.name + " through " + target + " of " + h);
            boolean pastEnd = target == Target.PAST_END;
            boolean read = op.read() && target != Target.READ_ONLY_KEY;
            long address = pastEnd ? h.address + h.length : h.address;
            int length = pastEnd ? 1 + op.pick() % 64 : Math.min(h.length, 64);
            try (Block local = intruder.arena.allocateShared(length, 8)) {
                local.segment().fill((byte) 0x5a);
                WorkRequest wr = read ? WorkRequest.read(local.region(), local.regionOffset(), length)
                        : WorkRequest.write(local.region(), local.regionOffset(), length);
                WcStatus status;
                try {
                    status = intruder.session.queuePair().postAsync(wr.remote(address, h.rkey)).join().status();
                } catch (CompletionException e) {
                    status = e.getCause() instanceof WorkCompletionException w ? w.status() : null;
                }
                awaitTrue(() -> intruder.ownerSide.closed().isDone(), "the owner to see " + intruder.name + " lost");
                check(intruder.ownerSide.closed().join().how() == SessionEnd.How.LOST, "the owner ended the session of "
                        + intruder.name + " as: " + intruder.ownerSide.closed().join());
                check(status == WcStatus.REM_ACCESS_ERR, "a raw " + (read ? "READ" : "WRITE") + " of " + length
                        + " B by " + intruder.name + " at 0x" + Long.toHexString(address) + " through the key of "
                        + h + ": " + status);
            }
            recover(intruder);
        }

        /** A live long requested lease, writable: what the racing steps end under a peer's feet. */
        private Held racing(int pick) {
            return pick(held.stream().filter(h -> h.stored == null && h.mustWork() && h.ownerActive()).toList(), pick);
        }

        private void race(Race op) {
            Held h = racing(op.pick());
            if (h == null) return;
            ran(op);
            h.ending(EndReason.RELEASED);
            int length = Math.min(h.length, 64);
            try (Block local = h.peer.arena.allocateShared(length, 8)) {
                local.segment().fill((byte) 0x6b);
                var closed = new AtomicBoolean();
                Workers.runTogether(2, thread -> {
                    if (thread == 0) {
                        while (true) { // until a write fails; one posted after close() returned must fail
                            boolean after = closed.get();
                            try {
                                h.peer.session.queuePair().postAsync(WorkRequest.write(local.region(),
                                        local.regionOffset(), length).remote(h.address, h.rkey)).join();
                            } catch (RuntimeException e) { // failed (CompletionException) or refused: revoked,
                                return;                      // and the QPs are in ERROR now
                            }
                            if (after) throw new AssertionError("a write through " + h + " posted after the owner's"
                                    + " close() returned succeeded");
                        }
                    } else {
                        h.lease.close();
                        closed.set(true);
                        for (int i = 0; i < 4; i++) storeLike(h.length, "R" + step + "." + i, step * 31L + i);
                    }
                });
            }
            recover(h.peer);
        }

        private void drain(Drain op) {
            Held h = racing(op.pick());
            if (h == null) return;
            ran(op);
            h.ending(EndReason.RELEASED);
            Block block = h.lease.block();
            CompletableFuture<WorkCompletion> receive = h.lease.postAsync(ownerLocal,
                    ReceiveRequest.into(block.region(), block.regionOffset(), h.length));
            CompletableFuture<Void> end = h.peer.ownerSide.leases().endAsync(h.lease, EndReason.RELEASED);
            for (int i = 0; i < 8; i++) {
                Stored s = storeLike(h.length, "D" + step + "." + i, step * 17L + i);
                check(s.block.address() != h.address, "the block of " + h + " was handed out again while the owner's"
                        + " receive into it was in flight");
            }
            check(block.isOpen() && !end.isDone(), h + " ended while the owner's receive into its block was in flight");
            WcStatus sent = sender.postAsync(WorkRequest.send(sendSource.region(), sendSource.regionOffset(), h.length))
                    .orTimeout(10, TimeUnit.SECONDS).join().status();
            check(sent == WcStatus.SUCCESS && receive.orTimeout(10, TimeUnit.SECONDS).join().isSuccess(),
                    "the owner's receive into " + h + " failed");
            end.orTimeout(10, TimeUnit.SECONDS).join();
            check(!block.isOpen(), "the block of " + h + " was not given back after the drain");
        }

        private List<Held> targets(Target target) {
            return held.stream().filter(h -> switch (target) {
                case ENDED_KEY -> h.lease != null && h.lease.ended().isDone();
                case OTHER_PEERS_KEY, PAST_END -> h.mustWork() && h.ownerActive();
                case READ_ONLY_KEY -> h.mustWork() && h.ownerActive() && !h.writable;
            }).toList();
        }

        /** After a session of {@code p} ended: waits until the owner revoked its every lease, then reconnects. */
        private void recover(Peer p) {
            RdmaSession ownerSide = p.ownerSide;
            int generation = p.generation;
            for (Held h : held) if (h.peer == p && h.generation == generation) h.ending(EndReason.SESSION_LOST);
            awaitTrue(() -> ownerSide.closed().isDone(), "the owner to see the session of " + p.name + " end");
            awaitTrue(() -> held.stream().noneMatch(h -> h.peer == p && h.generation == generation && h.ownerActive()),
                    "the owner to revoke every lease of " + p.name + "'s ended session");
            p.session.close();
            ownerSide.close();
            connect(p);
        }

        // ---- checks ----

        private void verify() {
            for (Peer p : peers) {
                check(p.session.lostReason() == null && p.ownerSide.lostReason() == null, "the session of " + p.name
                        + " was lost unprovoked: " + p.session.lostReason() + " / " + p.ownerSide.lostReason());
            }
            for (Held h : held) {
                if (h.lease == null) continue;
                if (h.lease.ended().isDone()) {
                    EndReason reason = h.lease.ended().join();
                    check(h.allowed().contains(reason), h + " ended " + reason + ", allowed " + h.allowed());
                } else {
                    check(h.expected == null, h + " has not ended, though " + h.expected + " ended it");
                    if (h.stored == null) compare(h.name, h.lease.block(), h.image, () -> h.ownerActive());
                }
            }
            for (Stored s : stored) if (!s.closed) compare(s.name, s.block, s.image, () -> true);
            // Who can read what: every lease that must work returns the model's bytes.
            for (Held h : List.copyOf(held)) {
                if (h.segment != null && !h.closed && h.mustWork() && h.peer.generation == h.generation) {
                    readAndCompare(h, 0, h.length);
                }
            }
            for (Peer p : peers) {
                InetAddress account = p.address();
                awaitTrue(() -> {
                    List<Held> mine = held.stream().filter(h -> h.ownerActive() && h.peer.address().equals(account))
                            .toList();
                    return ownerEndpoint.usage(account).equals(new RdmaEndpoint.PeerUsage(mine.size(), bytesOf(mine)));
                }, "the owner to count for " + account.getHostAddress() + " the leases the model holds live");
                var usage = ownerEndpoint.usage(account);
                check(usage.leases() <= LIMITS.maxLeases() && usage.leasedBytes() <= LIMITS.maxBytes(),
                        account + " holds " + usage + ", past " + LIMITS);
            }
        }

        /** The owner's bytes of {@code block} equal {@code image} — if {@code stillLive} after reading them. */
        private void compare(String name, Block block, byte[] image, BooleanSupplier stillLive) {
            byte[] now = snapshot(block);
            if (now == null || !stillLive.getAsBoolean() || Arrays.equals(now, image)) return;
            int i = Arrays.mismatch(now, image);
            throw failure(name + " at 0x" + Long.toHexString(block.address()) + " changed outside its leases' WRITEs:"
                    + " byte " + i + " is " + now[i] + ", the model has " + image[i]);
        }

        /** The block's bytes, or null if it was closed meanwhile (a lease that owned it ended). */
        private static byte[] snapshot(Block block) {
            try {
                return block.segment().toArray(ValueLayout.JAVA_BYTE);
            } catch (ResourceClosedException | IllegalStateException e) { // the block's close, or its scope's
                return null;
            }
        }

        /**
         * The owner's endpoint closes first (OWNER_CLOSED for what is left); then every lease must have ended once as
         * allowed, the owner's counters equal the ends observed, and no block be left in any arena.
         */
        @Override
        public void close() {
            try {
                for (Held h : held) if (h.ownerActive()) h.ending(EndReason.OWNER_CLOSED);
                ownerEndpoint.close();
                peers.forEach(p -> p.endpoint.close());
                System.gc();
                long leaked = leakedSegments();
                check(leaked == dropped, leaked + " segments reported as leaked, " + dropped + " dropped");
                Map<EndReason, Integer> ends = new EnumMap<>(EndReason.class);
                ends.put(EndReason.RELEASED, probes);
                for (Held h : held) {
                    if (h.lease == null) { // a short one that ended before the model could look it up
                        ends.merge(EndReason.EXPIRED, 1, Integer::sum);
                        continue;
                    }
                    check(h.lease.ended().isDone(), h + " never ended");
                    EndReason reason = h.lease.ended().join();
                    check(h.allowed().contains(reason), h + " ended " + reason + ", allowed " + h.allowed());
                    ends.merge(reason, 1, Integer::sum);
                }
                List<LeaseStats> stats = ownerSides.stream().map(o -> o.leases().stats()).toList();
                ToLongFunction<ToLongFunction<LeaseStats>> total = counter -> stats.stream().mapToLong(counter).sum();
                long g = total.applyAsLong(LeaseStats::granted);
                long released = total.applyAsLong(LeaseStats::released);
                long expired = total.applyAsLong(LeaseStats::expired);
                long revoked = total.applyAsLong(LeaseStats::revoked);
                long active = total.applyAsLong(LeaseStats::active) + total.applyAsLong(LeaseStats::activeBytes);
                long others = ends.getOrDefault(EndReason.SESSION_LOST, 0) + ends.getOrDefault(EndReason.OWNER_CLOSED, 0);
                check(released == ends.getOrDefault(EndReason.RELEASED, 0)
                        && expired == ends.getOrDefault(EndReason.EXPIRED, 0) && revoked == others,
                        "counted released/expired/revoked " + released + "/" + expired + "/" + revoked + ", observed "
                                + ends);
                for (Stored s : stored) if (!s.closed) s.block.close();
                sendSource.close();
                for (RdmaArena a : arenas) {
                    a.flushThreadCaches();
                    check(a.stats().liveBlocks() == 0, a.stats().liveBlocks() + " blocks never came back to " + a);
                }
            } finally {
                ownerEndpoint.close();
                peers.forEach(p -> p.endpoint.close());
                arenas.forEach(RdmaArena::close);
                graph.close();
            }
            check(graph.failures().isEmpty() && graph.liveCount() == 0, "left behind:\n" + graph.dump());
        }

        // ---- helpers ----

        private void awaitTrue(BooleanSupplier condition, String what) {
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (!condition.getAsBoolean()) {
                if (System.nanoTime() > deadline) throw failure("waited " + WAIT + " for " + what);
                try {
                    Thread.sleep(2);
                } catch (InterruptedException e) {
                    throw failure("interrupted waiting for " + what);
                }
            }
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
