package io.mooring.chaos;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.EndReason;
import io.mooring.lease.InboundMessage;
import io.mooring.lease.Isolation;
import io.mooring.lease.Lease;
import io.mooring.lease.LeaseLimits;
import io.mooring.lease.LeaseStats;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.CompletionDispatcher;
import io.mooring.verbs.ConnectOptions;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.QueuePair;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.ReceiveRequest;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletionException;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.testing.FaultInjection;
import io.mooring.verbs.testing.FaultPlan;
import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.QpCapabilities;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayDeque;
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
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * One chaos run: an owner endpoint on {@code soft0} serving honest peers (in-JVM on {@code soft0}, over the TCP fabric
 * on {@code soft1}) and a hostile one, every peer's device and the owner's injecting faults per a {@link FaultPlan}
 * drawn from the run's seed, while a program drawn from the same seed does, one step at a time, what the public API
 * allows: messages with and without immediate both ways, leases requested (long and short), offered, shared by several
 * peers on one block, written, read, renewed, released, expiring, dropped without close, the owner closing a shared
 * block, blocks handed between threads, raw writes racing the owner's end of a lease, an owner receive draining into
 * an ended lease's block, receives stalled, peers killed (their links severed and their process state gone) and links
 * cut; the hostile peer writes and reads through every key it ever saw and through guessed ones.
 *
 * <p>After every step the model checks: no byte of an owner block changed except through a live lease's WRITE (the
 * image of every leased, stored and filler block); every message arrives once, in order, intact (sequence numbers and
 * checksums, {@link Payload}); every lease ended at most once, for a reason the program allows, an expiry not before
 * its deadline plus grace nor more than {@link #LATE_BOUND} after, a lost peer's leases within {@link #LATE_BOUND} of
 * the loss. At the end: the owner's counters equal the ends observed, reason by reason, every block is back in its
 * arena and the resource graphs are empty ({@link ChaosTest} adds: no platform thread or file descriptor more). A
 * failure names the seed, the step and the last 40 steps.
 */
final class ChaosRun implements AutoCloseable {
    static final Set<Access> RW = EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE);
    static final Duration LONG = Duration.ofSeconds(60);
    static final Duration GRACE = Duration.ofMillis(50);
    /** How late (past deadline + grace, or past a peer's loss) a lease may end on this loaded machine. */
    static final Duration LATE_BOUND = Duration.ofSeconds(3);
    private static final Duration WAIT = Duration.ofSeconds(20);
    private static final LeaseLimits LIMITS = LeaseLimits.builder().maxBytes(4 << 20).maxLeases(256)
            .maxDuration(LONG).maxLifetime(Duration.ofMinutes(10))
            .maxAccess(EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE, Access.REMOTE_ATOMIC)).grace(GRACE).build();
    /** A lost injected packet is retransmitted after about 4 ms (4.096 µs × 2^10), not 67 ms. */
    private static final ConnectOptions OPTIONS = ConnectOptions.builder().ackTimeout(Duration.ofMillis(4)).build();
    private static final int HONEST = 3;

    final long seed;
    private final SplittableRandom random;
    final Figures figures = new Figures();
    private final ArrayDeque<String> trace = new ArrayDeque<>();
    private int step;

    private final ResourceGraph graph = ResourceGraph.builder().name("chaos-owner").build();
    private final DeviceContext ownerContext;
    private final RdmaArena ownerArena;
    private final RdmaEndpoint ownerEndpoint;
    private final RdmaListener listener;
    private final FaultInjection ownerFaults;
    /** The owner's own QP (not a session's), for the drain step, and its peer on a device of its own. */
    private final QueuePair ownerLocal;
    private final QueuePair sender;
    private final RdmaArena senderArena;
    private final List<Peer> peers = new ArrayList<>();
    private final Peer hostile;
    /** The owner's side of every session any peer ever had: whose lease counters must add up at the end. */
    private final List<RdmaSession> ownerSides = new ArrayList<>();

    private final List<Held> held = new ArrayList<>();
    private final List<Stored> stored = new ArrayList<>();
    private final List<Filler> fillers = new ArrayList<>();
    /** Every key any peer was ever given, for the hostile peer. */
    private final List<Held> keys = new ArrayList<>();
    private final List<Long> revocationMillis = new ArrayList<>();

    ChaosRun(long seed) {
        this.seed = seed;
        this.random = new SplittableRandom(seed);
        try {
            ownerContext = RdmaDevices.open("soft:soft0", graph);
            ProtectionDomain pd = ownerContext.allocateProtectionDomain();
            ownerArena = arena(pd);
            ownerFaults = ownerContext.injectFaults(plan(random.nextLong()));
            ProtectionDomain senderPd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
            senderArena = arena(senderPd);
            ownerLocal = queuePair(pd);
            sender = queuePair(senderPd);
            ownerLocal.connect(sender.info());
            sender.connect(ownerLocal.info());
            // Peers lose sessions on purpose (kills, the hostile peer's accesses) and come back at once.
            var builder = RdmaEndpoint.builder(pd, ownerArena).limits(LIMITS).connectOptions(OPTIONS)
                    .failureBackoff(Duration.ZERO);
            // -Dmooring.chaos.isolation=DEDICATED_REGISTRATION runs the owner as on rxe; by default the device is probed.
            String isolation = System.getProperty("mooring.chaos.isolation");
            if (isolation != null) builder.isolation(Isolation.valueOf(isolation));
            ownerEndpoint = builder.build();
            figures.isolation = ownerEndpoint.isolation();
            listener = ownerEndpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            for (int i = 0; i < HONEST; i++) peers.add(new Peer("P" + i, i == HONEST - 1 ? "soft1" : "soft0"));
            hostile = new Peer("H", "soft1");
            for (Peer p : peers) p.start();
            hostile.start();
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The arena every chaos owner and peer uses: small chunks, so that blocks are reused soon. */
    static RdmaArena arena(ProtectionDomain pd) {
        return RdmaArena.builder(pd).chunkSize(1 << 20).shards(1).access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND))
                .build();
    }

    private static QueuePair queuePair(ProtectionDomain pd) {
        var cq = pd.context().createCompletionQueue(64);
        cq.startDispatcher(CompletionDispatcher.Mode.EVENTS, wc -> {});
        return pd.createQueuePair(cq, cq, QpCapabilities.DEFAULT);
    }

    /** Every drawn fault at 2% per packet: each is retransmitted (or deduplicated) and must change nothing. */
    private static FaultPlan plan(long seed) {
        return FaultPlan.seeded(seed).dropRequests(0.02).dropResponses(0.02).duplicate(0.02).reorder(0.02)
                .corrupt(0.02).delay(0.02, Duration.ofMillis(1));
    }

    // ---- the model ---------------------------------------------------------------------------------------------

    /** One incarnation of a peer process: its own device context, arena, endpoint, faults and one session. */
    private final class Peer {
        final String name;
        final String device;
        int incarnation;
        ResourceGraph peerGraph;
        DeviceContext context;
        RdmaArena arena;
        RdmaEndpoint endpoint;
        FaultInjection faults;
        RdmaSession session;
        RdmaSession ownerSide;
        long sentToOwner;   // sequence numbers per direction, per incarnation
        long sentToPeer;
        long receivedByOwner;
        long receivedByPeer;

        Peer(String name, String device) {
            this.name = name;
            this.device = device;
        }

        void start() {
            incarnation++;
            peerGraph = ResourceGraph.builder().name("chaos-" + name + "-" + incarnation).build();
            context = RdmaDevices.open("soft:" + device, peerGraph);
            ProtectionDomain pd = context.allocateProtectionDomain();
            arena = arena(pd);
            endpoint = RdmaEndpoint.builder(pd, arena).connectOptions(OPTIONS).build();
            faults = context.injectFaults(plan(random.nextLong()));
            connect();
        }

        void connect() {
            var accepted = listener.acceptAsync();
            session = endpoint.connectAsync(listener.address()).join();
            ownerSide = accepted.join();
            ownerSides.add(ownerSide);
            sentToOwner = sentToPeer = receivedByOwner = receivedByPeer = 0;
        }

        boolean alive() {
            return session.lostReason() == null && ownerSide.lostReason() == null;
        }

        /** What a process's death leaves: nothing of it, its links severed first so that nothing crosses them. */
        void die() {
            figures.add(faults.counts());
            faults.killPeer();
            session.close();
            endpoint.close();
            arena.close();
            peerGraph.close();
            check(peerGraph.liveCount() == 0, name + " left behind:\n" + peerGraph.dump());
        }

        @Override
        public String toString() {
            return name + "." + incarnation;
        }
    }

    /** A lease some peer holds; {@code image} is the model of its bytes while it is active. */
    private final class Held {
        final Peer peer;
        final int incarnation;
        final RdmaSession session;
        final Lease lease;          // the owner's side; null if it ended before it could be looked up
        final Stored stored;        // the shared block it exposes, or null: a requested block, owned by its lease
        final byte[] image;
        final long address;
        final int rkey;
        final int length;
        final long deadlineNanos;   // the latest the owner's deadline can be: granted before it was received
        final long earliestEndNanos;
        boolean isShort;
        RemoteSegment segment;
        EnumSet<EndReason> allowed = EnumSet.noneOf(EndReason.class);
        /** When the owner's side saw it end (a dependent of {@code ended()}: it may run just after). */
        final CompletableFuture<Long> endedAt;

        Held(Peer peer, RemoteSegment segment, Lease lease, Stored stored, byte[] image, long askedNanos,
             Duration duration, boolean isShort) {
            this.peer = peer;
            this.incarnation = peer.incarnation;
            this.session = peer.session;
            this.segment = segment;
            this.lease = lease;
            this.stored = stored;
            this.image = image;
            this.address = segment.address();
            this.rkey = segment.rkey();
            this.length = (int) segment.length();
            this.isShort = isShort;
            this.earliestEndNanos = askedNanos + duration.toNanos() + GRACE.toNanos();
            this.deadlineNanos = System.nanoTime() + duration.toNanos() + GRACE.toNanos();
            if (isShort) allowed.add(EndReason.EXPIRED);
            endedAt = lease == null ? new CompletableFuture<>() : lease.ended().thenApply(r -> System.nanoTime());
        }

        boolean active() {
            return lease != null && !lease.ended().isDone();
        }

        /** A long lease nothing has ended, of a live session: every access through it must work. */
        boolean mustWork() {
            return lease != null && lease.isActive() && !isShort && allowed.isEmpty() && segment != null
                    && peer.incarnation == incarnation && peer.alive();
        }

        void ending(EndReason reason) {
            allowed.add(reason);
        }

        @Override
        public String toString() {
            return (stored != null ? "offered " : "") + "lease " + (lease == null ? "?" : lease.id()) + " of " + peer
                    + " (" + length + " B" + (isShort ? ", short" : "") + ")";
        }
    }

    /** An application block of the owner's, offered to peers. */
    private record Stored(String name, Block block, byte[] image) {}

    private record Filler(String name, Block block, byte[] image) {}

    // ---- the program -------------------------------------------------------------------------------------------

    void run(int steps) {
        for (int i = 0; i < steps; i++) {
            step++;
            int kind = random.nextInt(100);
            if (kind < 14) send(pickPeer(), random.nextBoolean(), random.nextBoolean());
            else if (kind < 26) request(pickPeer(), random.nextInt(5) == 0);
            else if (kind < 38) write();
            else if (kind < 41) read();
            else if (kind < 45) {
                if (random.nextBoolean()) race();
                else drain();
            }
            else if (kind < 50) release();
            else if (kind < 53) renew();
            else if (kind < 55) drop();
            else if (kind < 58) expire();
            else if (kind < 64) store();
            else if (kind < 70) offer();
            else if (kind < 73) closeStored();
            else if (kind < 78) filler();
            else if (kind < 80) freeFiller();
            else if (kind < 84) handOff(pickPeer());
            else if (kind < 94) attack();
            else if (kind < 96) hostileLease();
            else if (kind < 97) stall(pickPeer());
            else if (kind < 98) kill(pickPeer());
            else cut(pickPeer());
            verify();
        }
    }

    private Peer pickPeer() {
        return peers.get(random.nextInt(peers.size()));
    }

    private void note(String line) {
        if (trace.size() == 40) trace.removeFirst();
        trace.addLast("#" + step + " " + line);
    }

    /** {@code n} messages one way, each received, in order and intact, before the step ends. */
    private void send(Peer p, boolean toOwner, boolean withImm) {
        int n = 1 + random.nextInt(4);
        note(n + " message(s) " + (toOwner ? p + " -> owner" : "owner -> " + p) + (withImm ? " with imm" : ""));
        RdmaSession from = toOwner ? p.session : p.ownerSide;
        RdmaSession to = toOwner ? p.ownerSide : p.session;
        RdmaArena arena = toOwner ? p.arena : ownerArena;
        var sends = new ArrayList<CompletableFuture<?>>();
        var blocks = new ArrayList<Block>();
        for (int i = 0; i < n; i++) {
            long seq = toOwner ? ++p.sentToOwner : ++p.sentToPeer;
            int length = Payload.HEADER + random.nextInt(2048);
            Block b = arena.allocateShared(length, 8);
            Payload.write(b.segment(), length, seq);
            blocks.add(b);
            sends.add(withImm ? from.sendWithImmAsync(b, length, (int) seq) : from.sendAsync(b, length));
            figures.messagesSent++;
        }
        for (int i = 0; i < n; i++) {
            try (InboundMessage m = to.receive(WAIT)) {
                long seq = checked(() -> Payload.check(m.data()));
                long expected = toOwner ? ++p.receivedByOwner : ++p.receivedByPeer;
                check(seq == expected, "message " + seq + " arrived where " + expected + " was next: "
                        + (seq < expected ? "delivered twice" : "one lost"));
                check(m.hasImmediate() == withImm && (!withImm || m.immediate() == (int) seq),
                        "message " + seq + " carries the wrong immediate");
                figures.messagesDelivered++;
            } catch (io.mooring.lifecycle.MooringTimeoutException e) {
                throw failure("message " + (i + 1) + " of " + n + " never arrived");
            }
        }
        for (var s : sends) s.orTimeout(WAIT.toMillis(), TimeUnit.MILLISECONDS).join();
        blocks.forEach(Block::close);
    }

    private void request(Peer p, boolean isShort) {
        int size = 1 + random.nextInt(random.nextInt(4) == 0 ? 16384 : 512);
        Duration duration = isShort ? Duration.ofMillis(150 + random.nextInt(250)) : LONG;
        long asked = System.nanoTime();
        RemoteSegment segment = p.session.requestRemote(size, duration, RW);
        Lease lease = p.ownerSide.leases().lease(segment.leaseId());
        check(lease != null || isShort, "lease " + segment.leaseId() + " is not active at the owner after its GRANT");
        byte[] image = lease == null ? new byte[size] : snapshot(lease.block(), lease.offset(), size);
        var h = new Held(p, segment, lease, null, image == null ? new byte[size] : image, asked, duration, isShort);
        held.add(h);
        keys.add(h);
        figures.leasesGranted++;
        note(p + " requested " + h + " at 0x" + Long.toHexString(h.address));
    }

    /** A lease of an honest peer: one every access must work through ({@code mustWork}), or any of a live session. */
    private Held pickHeld(boolean mustWork) {
        List<Held> candidates = held.stream().filter(h -> h.segment != null && h.peer != hostile
                && (mustWork ? h.mustWork() : h.peer.incarnation == h.incarnation)).toList();
        return candidates.isEmpty() ? null : candidates.get(random.nextInt(candidates.size()));
    }

    private void write() {
        Held h = pickHeld(true);
        if (h == null) return;
        int offset = random.nextInt(h.length);
        int length = 1 + random.nextInt(Math.min(h.length - offset, 4096));
        byte[] data = new byte[length];
        random.nextBytes(data);
        note(h.peer + " writes [" + offset + ", +" + length + ") of " + h);
        try (Block src = h.peer.arena.allocateShared(length, 8)) {
            src.segment().copyFrom(MemorySegment.ofArray(data));
            h.segment.write(src, offset);
        }
        System.arraycopy(data, 0, h.image, offset, length);
        figures.leaseWrites++;
    }

    private void read() {
        Held h = pickHeld(true);
        if (h == null) return;
        int offset = random.nextInt(h.length);
        int length = 1 + random.nextInt(h.length - offset);
        note(h.peer + " reads [" + offset + ", +" + length + ") of " + h);
        try (Block dst = h.peer.arena.allocateShared(length, 8)) {
            h.segment.read(dst, offset);
            check(Arrays.equals(dst.segment().toArray(ValueLayout.JAVA_BYTE), 0, length, h.image, offset,
                    offset + length), "a READ of " + h + " returned other bytes than were written");
        }
    }

    private void release() {
        Held h = pickHeld(false);
        if (h == null) return;
        note(h.peer + " releases " + h);
        boolean live = h.peer.alive();
        if (live && h.lease != null && h.lease.isActive()) h.ending(EndReason.RELEASED);
        h.segment.close();
        h.segment = null;
        if (live && h.lease != null) await(() -> h.lease.ended().isDone(), h + " to end after RELEASE_ACK");
    }

    private void renew() {
        Held h = pickHeld(true);
        if (h == null) return;
        note(h.peer + " renews " + h);
        h.segment.renew(LONG);
    }

    private void drop() {
        Held h = pickHeld(false);
        if (h == null) return;
        note(h.peer + " drops " + h + " unclosed");
        if (h.peer.alive() && h.lease != null && h.lease.isActive()) h.ending(EndReason.RELEASED);
        h.segment = null; // the only reference: its Cleaner must release the lease
        figures.dropped++;
        if (h.peer.alive() && h.lease != null) {
            // A collection every 50 ms, not every poll: back-to-back full collections stop every thread, the owner's
            // lease timer too, which makes other leases expire late: the model would blame the endpoint for the test.
            long[] lastGc = {0};
            await(() -> {
                if (System.nanoTime() - lastGc[0] > 50_000_000L) {
                    System.gc();
                    lastGc[0] = System.nanoTime();
                }
                return h.lease.ended().isDone();
            }, "the Cleaner to release " + h);
        }
    }

    private void expire() {
        List<Held> short_ = held.stream().filter(h -> h.isShort && h.active()).toList();
        if (short_.isEmpty()) return;
        Held h = short_.get(random.nextInt(short_.size()));
        note("waits for " + h + " to expire");
        await(() -> !h.active(), h + " to expire");
    }

    private void store() {
        if (stored.size() >= 8) return;
        int size = 1 + random.nextInt(8192);
        byte[] image = new byte[size];
        random.nextBytes(image);
        Block b = ownerArena.allocateShared(size, 8);
        b.segment().copyFrom(MemorySegment.ofArray(image));
        stored.add(new Stored("S" + step, b, image));
        note("owner stores S" + step + " (" + size + " B) at 0x" + Long.toHexString(b.address()));
    }

    /** The owner offers one stored block to one to three peers at once: one block, several leases. */
    private void offer() {
        if (stored.isEmpty()) return;
        Stored s = stored.get(random.nextInt(stored.size()));
        int n = 1 + random.nextInt(peers.size());
        for (int i = 0; i < n; i++) {
            Peer p = peers.get((step + i) % peers.size());
            long asked = System.nanoTime();
            Lease lease = p.ownerSide.offer(s.block(), LONG, RW);
            RemoteSegment segment;
            try {
                segment = p.session.receiveOffer(WAIT);
            } catch (io.mooring.lifecycle.MooringTimeoutException e) {
                throw failure("the offer of " + s.name() + " never reached " + p);
            }
            check(segment.leaseId() == lease.id() && segment.address() == s.block().address(),
                    "the offer " + segment + " is not the owner's " + lease);
            var h = new Held(p, segment, lease, s, s.image(), asked, LONG, false);
            held.add(h);
            keys.add(h);
            figures.leasesGranted++;
            note("owner offers " + s.name() + " to " + p + ": " + h);
        }
    }

    /**
     * The owner closes a stored block, perhaps leased to several peers: its leases end, and until they are revoked no
     * filler may get its memory; fillers are allocated right away to catch that.
     */
    private void closeStored() {
        if (stored.isEmpty()) return;
        Stored s = stored.remove(random.nextInt(stored.size()));
        note("owner closes " + s.name());
        for (Held h : held) if (h.stored == s && h.active()) h.ending(EndReason.OWNER_CLOSED);
        s.block().close();
        for (int i = 0; i < 3; i++) filler(s.image().length);
    }

    private void filler() {
        filler(1 + random.nextInt(8192));
    }

    private void filler(int size) {
        if (fillers.size() >= 32) return;
        byte[] image = new byte[size];
        random.nextBytes(image);
        Block b = ownerArena.allocateShared(size, 8);
        b.segment().copyFrom(MemorySegment.ofArray(image));
        fillers.add(new Filler("F" + step + "." + fillers.size(), b, image));
    }

    private void freeFiller() {
        if (fillers.isEmpty()) return;
        fillers.remove(random.nextInt(fillers.size())).block().close();
    }

    /**
     * The owner fills a confined block on this thread, hands it off, and a virtual thread takes hold, checks it and
     * sends it to a peer: the message must arrive intact.
     */
    private void handOff(Peer p) {
        long seq = ++p.sentToPeer;
        int length = Payload.HEADER + random.nextInt(1024);
        note("owner hands a block to a virtual thread, which sends message " + seq + " to " + p);
        Block b = ownerArena.allocate(length);
        Payload.write(b.segment(), length, seq);
        b.handOff();
        var sent = new CompletableFuture<Void>();
        Thread.ofVirtual().start(() -> {
            try {
                check(Payload.check(b.segment().asSlice(0, length)) == seq, "the handed-off block changed");
                p.ownerSide.send(b);
                sent.complete(null);
            } catch (Throwable t) {
                sent.completeExceptionally(t);
            } finally {
                b.close(); // on the thread that holds it: an mt free, collected by the arena
            }
        });
        figures.messagesSent++;
        try (InboundMessage m = p.session.receive(WAIT)) {
            check(checked(() -> Payload.check(m.data().asSlice(0, length))) == seq && ++p.receivedByPeer == seq,
                    "the handed-off message " + seq + " arrived wrong");
            figures.messagesDelivered++;
        } catch (io.mooring.lifecycle.MooringTimeoutException e) {
            throw failure("the handed-off message never arrived");
        }
        sent.orTimeout(WAIT.toMillis(), TimeUnit.MILLISECONDS).join();
    }

    /**
     * A peer keeps writing through one of its leases on its raw QP while the owner ends the lease and, before the end
     * completes, allocates fillers of its size: a block given back before its window is invalidated would be handed
     * to a filler, and a write would land there. A write posted after the end completed must fail; that failure
     * breaks the peer's session, so the peer is started again.
     */
    private void race() {
        Held h = pickHeld(true);
        if (h == null || h.stored != null) return;
        Peer p = h.peer;
        note(p + " races raw writes through " + h + " against the owner's end of it");
        h.ending(EndReason.RELEASED);
        for (Held o : held) if (o.peer == p && o.incarnation == p.incarnation && o.active()) o.ending(EndReason.SESSION_LOST);
        int length = Math.min(h.length, 64);
        var closed = new java.util.concurrent.atomic.AtomicBoolean();
        var writer = new CompletableFuture<Void>();
        try (Block local = p.arena.allocateShared(length, 8)) {
            local.segment().fill((byte) 0x6b);
            WorkRequest write = WorkRequest.write(local.region(), local.regionOffset(), length).remote(h.address, h.rkey);
            Thread.ofVirtual().start(() -> {
                while (true) {
                    boolean after = closed.get();
                    try {
                        p.session.queuePair().postAsync(write).join();
                    } catch (RuntimeException e) { // refused or failed: revoked, and the QPs are in ERROR now
                        writer.complete(null);
                        return;
                    }
                    if (after) {
                        writer.completeExceptionally(new AssertionError("a write through " + h + " posted after its"
                                + " end completed succeeded"));
                        return;
                    }
                }
            });
            CompletableFuture<Void> end = p.ownerSide.leases().endAsync(h.lease, EndReason.RELEASED);
            for (int i = 0; i < 4; i++) filler(h.length); // while the end is in progress
            end.orTimeout(WAIT.toMillis(), TimeUnit.MILLISECONDS).join();
            closed.set(true);
            try {
                writer.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                throw failure("the racing writer: " + (e.getCause() != null ? e.getCause().getMessage() : e));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw failure("interrupted");
            }
        }
        figures.races++;
        awaitRevoked(p, p.ownerSide, System.nanoTime(), false);
        p.die();
        p.start();
    }

    /**
     * The owner posts a receive into a leased block (through the lease, on a QP of its own) and ends the lease: until
     * a SEND fills the receive the block must stay out of the arena — the end pending, the block open, fillers
     * allocated meanwhile elsewhere — and the SEND must land in the block, not in them.
     */
    private void drain() {
        Held h = pickHeld(true);
        if (h == null || h.stored != null) return;
        note("owner drains a receive into " + h + " while ending it");
        h.ending(EndReason.RELEASED);
        Block block = h.lease.block();
        var receive = h.lease.postAsync(ownerLocal, ReceiveRequest.into(block.region(),
                block.regionOffset() + h.lease.offset(), h.length));
        CompletableFuture<Void> end = h.peer.ownerSide.leases().endAsync(h.lease, EndReason.RELEASED);
        for (int i = 0; i < 4; i++) {
            filler(h.length);
            check(fillers.isEmpty() || fillers.getLast().block().address() != h.address, "the block of " + h
                    + " was handed out again while the owner's receive into it was in flight");
        }
        check(block.isOpen() && !end.isDone(), h + " ended while the owner's receive into its block was in flight");
        try (Block source = senderArena.allocateShared(h.length, 8)) {
            source.segment().fill((byte) 0x3c);
            var sent = sender.postAsync(WorkRequest.send(source.region(), source.regionOffset(), h.length))
                    .orTimeout(WAIT.toMillis(), TimeUnit.MILLISECONDS).join();
            check(sent.isSuccess() && receive.orTimeout(WAIT.toMillis(), TimeUnit.MILLISECONDS).join().isSuccess(),
                    "the owner's receive into " + h + " failed");
        }
        end.orTimeout(WAIT.toMillis(), TimeUnit.MILLISECONDS).join();
        check(!block.isOpen(), "the block of " + h + " was not given back after the drain");
        figures.drains++;
    }

    /** The hostile peer takes a lease, writes through it, and releases it: its key is a late key from then on. */
    private void hostileLease() {
        request(hostile, false);
        Held h = held.getLast();
        try (Block src = hostile.arena.allocateShared(h.length, 8)) {
            byte[] data = new byte[h.length];
            random.nextBytes(data);
            src.segment().copyFrom(MemorySegment.ofArray(data));
            h.segment.write(src, 0);
            System.arraycopy(data, 0, h.image, 0, h.length);
        }
        h.ending(EndReason.RELEASED);
        h.segment.close();
        h.segment = null;
    }

    /**
     * The hostile peer writes or reads through a key it should not use: one of an ended lease (late), another peer's
     * live lease, just past a live lease's end, or a guess. The owner must refuse it (REM_ACCESS_ERR), which breaks the
     * hostile session and no other; it reconnects at once.
     */
    private void attack() {
        long address;
        int rkey;
        int length = 1 + random.nextInt(64);
        String what;
        int kind = random.nextInt(4);
        List<Held> ended = keys.stream().filter(h -> h.lease != null && h.lease.ended().isDone()).toList();
        List<Held> live = keys.stream().filter(h -> h.active() && h.peer != hostile).toList();
        if (kind == 0 && !ended.isEmpty()) {
            Held h = ended.get(random.nextInt(ended.size()));
            address = h.address + random.nextInt(h.length);
            rkey = h.rkey;
            what = "the ended " + h;
            figures.lateAccesses++;
        } else if (kind == 1 && !live.isEmpty()) {
            Held h = live.get(random.nextInt(live.size()));
            address = h.address + random.nextInt(h.length);
            rkey = h.rkey;
            what = "the live " + h + " of another peer";
            figures.forgedAccesses++;
        } else if (kind == 2 && !live.isEmpty()) {
            Held h = live.get(random.nextInt(live.size()));
            address = h.address + h.length;
            rkey = h.rkey;
            what = "just past the live " + h;
            figures.forgedAccesses++;
        } else {
            Held h = keys.isEmpty() ? null : keys.get(random.nextInt(keys.size()));
            address = h == null ? random.nextLong() : h.address + random.nextInt(1 << 16) - (1 << 15);
            rkey = h == null ? random.nextInt() : (h.rkey & ~0xff) + (1 + random.nextInt(255)) * (random.nextBoolean() ? 1 : 0x100);
            what = "a guessed key 0x" + Integer.toHexString(rkey);
            figures.forgedAccesses++;
        }
        boolean isRead = random.nextBoolean();
        note("hostile " + (isRead ? "READ" : "WRITE") + " of " + length + " B at 0x" + Long.toHexString(address)
                + " through " + what);
        WcStatus status;
        try (Block local = hostile.arena.allocateShared(length, 8)) {
            local.segment().fill((byte) 0x5a);
            WorkRequest wr = isRead ? WorkRequest.read(local.region(), local.regionOffset(), length)
                    : WorkRequest.write(local.region(), local.regionOffset(), length);
            try {
                status = hostile.session.queuePair().postAsync(wr.remote(address, rkey))
                        .orTimeout(WAIT.toMillis(), TimeUnit.MILLISECONDS).join().status();
            } catch (CompletionException e) {
                status = e.getCause() instanceof WorkCompletionException w ? w.status() : null;
                if (status == null) throw failure("the hostile access failed with " + e.getCause());
            }
        }
        // Refused at the owner (REM_ACCESS_ERR); or its NAK was lost to a fault and the retransmissions met the owner's
        // QP in ERROR (RETRY_EXC_ERR) or its destroyed link (WR_FLUSH_ERR). Either way the owner's session is lost.
        check(status == WcStatus.REM_ACCESS_ERR || status == WcStatus.RETRY_EXC_ERR || status == WcStatus.WR_FLUSH_ERR,
                "the hostile access through " + what + " ended " + status + "; the hostile session: "
                        + hostile.session.lostReason() + " / " + hostile.ownerSide.lostReason());
        // A guess that an earlier step's check or this one made: its session is lost, the others are untouched.
        RdmaSession lost = hostile.ownerSide;
        await(() -> lost.lostReason() != null, "the owner to drop the hostile session");
        for (Peer p : peers) check(p.alive(), p + "'s session was lost by the hostile peer's access: "
                + p.session.lostReason() + " / " + p.ownerSide.lostReason());
        hostile.session.close();
        hostile.connect();
    }

    /**
     * A peer's responder stalls for 1–2 ms (RNR NAKs) while the owner sends it messages: fewer than the session's RNR
     * retries last, so they must all arrive.
     */
    private void stall(Peer p) {
        Duration stall = Duration.ofMillis(1 + random.nextInt(2));
        note(p + " stalls its receives for " + stall.toMillis() + " ms");
        figures.add(p.faults.counts());
        p.faults.close();
        p.faults = p.context.injectFaults(plan(random.nextLong()).stallReceives(stall));
        send(p, false, random.nextBoolean());
    }

    /** A peer process dies: its links are severed, its sockets closed; every lease it held must be revoked. */
    private void kill(Peer p) {
        note(p + " is killed");
        long killed = System.nanoTime();
        RdmaSession ownerSide = p.ownerSide;
        for (Held h : held) if (h.peer == p && h.incarnation == p.incarnation && h.active()) h.ending(EndReason.SESSION_LOST);
        p.die();
        awaitRevoked(p, ownerSide, killed, true);
        figures.peersKilled++;
        p.start();
    }

    /** A peer's links are cut while its process lives on: the owner's next message to it fails and ends the session. */
    private void cut(Peer p) {
        note(p + "'s links are cut");
        RdmaSession ownerSide = p.ownerSide;
        for (Held h : held) if (h.peer == p && h.incarnation == p.incarnation && h.active()) h.ending(EndReason.SESSION_LOST);
        p.faults.cut();
        long cut = System.nanoTime();
        try (Block b = ownerArena.allocateShared(Payload.HEADER, 8)) {
            Payload.write(b.segment(), Payload.HEADER, ++p.sentToPeer);
            ownerSide.sendAsync(b, Payload.HEADER).handle((wc, e) -> null).orTimeout(WAIT.toMillis(),
                    TimeUnit.MILLISECONDS).join();
        }
        awaitRevoked(p, ownerSide, cut, true);
        figures.linksCut++;
        p.die();
        p.start();
    }

    /** Waits until the owner lost {@code p} and revoked its leases; {@code measured}: counts the time since {@code since}. */
    private void awaitRevoked(Peer p, RdmaSession ownerSide, long since, boolean measured) {
        await(() -> ownerSide.lostReason() != null, "the owner to see " + p + " lost");
        List<Held> its = held.stream().filter(h -> h.peer == p && h.incarnation == p.incarnation && h.lease != null).toList();
        await(() -> its.stream().noneMatch(Held::active), "the owner to revoke every lease of " + p);
        long last = its.stream().mapToLong(h -> h.endedAt.join()).max().orElse(since);
        if (measured && !its.isEmpty()) {
            revocationMillis.add(Math.max(0, (last - since) / 1_000_000));
            check(last - since <= LATE_BOUND.toNanos(), "the leases of " + p + " were revoked "
                    + (last - since) / 1_000_000 + " ms after its loss");
        }
    }

    // ---- checks ------------------------------------------------------------------------------------------------

    private void verify() {
        for (Held h : held) {
            if (h.lease == null) continue;
            if (h.active()) {
                if (h.stored != null) continue; // checked with its block below
                byte[] now = snapshot(h.lease.block(), h.lease.offset(), h.length);
                if (now != null && h.active() && !Arrays.equals(now, h.image)) {
                    throw failure(h + " changed outside what its lease wrote: " + difference(now, h.image));
                }
            } else {
                EndReason reason = h.lease.ended().join();
                check(h.allowed.contains(reason), h + " ended " + reason + ", allowed " + h.allowed);
                if (reason == EndReason.EXPIRED) {
                    long endedNanos = h.endedAt.join();
                    check(endedNanos >= h.earliestEndNanos, h + " expired "
                            + (h.earliestEndNanos - endedNanos) / 1_000_000 + " ms before its deadline plus grace");
                    long late = endedNanos - h.deadlineNanos;
                    figures.maxExpiryLateMillis = Math.max(figures.maxExpiryLateMillis, late / 1_000_000);
                    check(late <= LATE_BOUND.toNanos(), h + " expired " + late / 1_000_000 + " ms late");
                }
            }
        }
        for (Stored s : stored) {
            byte[] now = s.block().segment().toArray(ValueLayout.JAVA_BYTE);
            if (!Arrays.equals(now, s.image())) throw failure(s.name() + " changed: " + difference(now, s.image()));
        }
        for (Filler f : fillers) {
            byte[] now = f.block().segment().toArray(ValueLayout.JAVA_BYTE);
            if (!Arrays.equals(now, f.image())) {
                for (int i = 0; i < now.length; i++) if (now[i] != f.image()[i]) figures.reusedBytesChanged++;
                throw failure("filler " + f.name() + " at 0x" + Long.toHexString(f.block().address())
                        + " (reused memory) changed: " + difference(now, f.image()));
            }
        }
        for (Peer p : peers) check(p.alive(), p + "'s session was lost: " + p.session.lostReason() + " / "
                + p.ownerSide.lostReason());
        held.removeIf(h -> h.segment == null && (h.lease == null || !h.active()) && countEnd(h));
    }

    /** Counts a lease that ended and is no longer followed. */
    private boolean countEnd(Held h) {
        figures.ends.merge(h.lease == null ? EndReason.EXPIRED : h.lease.ended().join(), 1L, Long::sum);
        return true;
    }

    private static byte[] snapshot(Block block, long offset, int length) {
        try {
            return block.segment().asSlice(offset, length).toArray(ValueLayout.JAVA_BYTE);
        } catch (ResourceClosedException | IllegalStateException e) { // the block's close, or its scope's
            return null; // the lease ended and its block was closed meanwhile
        }
    }

    private static String difference(byte[] now, byte[] expected) {
        int i = Arrays.mismatch(now, expected);
        return "byte " + i + " is " + now[i] + ", expected " + expected[i];
    }

    /**
     * Ends everything and checks what must hold at the end: every lease ended once as allowed, the owners' counters
     * equal to the ends observed, every block back in its arena, the graphs empty.
     */
    @Override
    public void close() {
        try {
            for (Held h : held) {
                if (h.active()) h.allowed.addAll(EnumSet.of(EndReason.OWNER_CLOSED, EndReason.SESSION_LOST));
            }
            for (Peer p : peers) p.ownerSide.close();
            hostile.ownerSide.close();
            for (Held h : held) {
                if (h.lease == null) continue;
                check(h.lease.ended().isDone(), h + " never ended");
                EndReason reason = h.lease.ended().join();
                check(h.allowed.contains(reason), h + " ended " + reason + ", allowed " + h.allowed);
            }
            held.removeIf(this::countEnd);
            for (Peer p : peers) p.die();
            hostile.die();
            figures.add(ownerFaults.counts());
            sender.close();
            ownerLocal.close();
            senderArena.close();
            long granted = 0, released = 0, expired = 0, revoked = 0, active = 0;
            for (RdmaSession o : ownerSides) {
                LeaseStats s = o.leases().stats();
                granted += s.granted();
                released += s.released();
                expired += s.expired();
                revoked += s.revoked();
                active += s.active();
            }
            long observed = figures.ends.values().stream().mapToLong(Long::longValue).sum();
            check(granted == figures.leasesGranted, "the owner granted " + granted + " leases, the peers got "
                    + figures.leasesGranted);
            long seenReleased = figures.ends.getOrDefault(EndReason.RELEASED, 0L);
            long seenExpired = figures.ends.getOrDefault(EndReason.EXPIRED, 0L);
            check(active == 0 && observed == granted && released == seenReleased && expired == seenExpired
                    && revoked == observed - seenReleased - seenExpired, "the owner counts " + released + " released, "
                    + expired + " expired, " + revoked + " revoked of " + granted + " leases (" + active + " active);"
                    + " the model saw " + figures.ends);
            figures.leaseLifetimes = observed;
            stored.forEach(s -> s.block().close());
            fillers.forEach(f -> f.block().close());
            listener.close();
            ownerEndpoint.close();
            ownerArena.flushThreadCaches();
            await(() -> ownerArena.stats().liveBlocks() == 0, "every owner block to come back ("
                    + ownerArena.stats().liveBlocks() + " live)");
        } finally {
            ownerFaults.close();
            listener.close();
            ownerEndpoint.close();
            ownerArena.close();
            graph.close();
        }
        check(graph.failures().isEmpty() && graph.liveCount() == 0, "left behind:\n" + graph.dump());
        revocationMillis.sort(null);
        figures.revocationMillis = List.copyOf(revocationMillis);
    }

    // ---- helpers -----------------------------------------------------------------------------------------------

    private <T> T checked(java.util.function.Supplier<T> check) {
        try {
            return check.get();
        } catch (AssertionError e) {
            throw failure(e.getMessage());
        }
    }

    private void await(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw failure("waited " + WAIT + " for " + what);
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw failure("interrupted waiting for " + what);
            }
        }
    }

    private void check(boolean ok, String message) {
        if (!ok) throw failure(message);
    }

    private AssertionError failure(String message) {
        return new AssertionError("chaos seed " + seed + " (-Dmooring.chaos.seed=" + seed + "), step #" + step + ": "
                + message + "\nlast steps:\n  " + String.join("\n  ", trace));
    }

    /** What a run did and saw, for docs/verification.md. */
    static final class Figures {
        long leasesGranted;
        long leaseLifetimes;
        long leaseWrites;
        long dropped;
        long lateAccesses;
        long forgedAccesses;
        long reusedBytesChanged;
        long messagesSent;
        long messagesDelivered;
        long peersKilled;
        long linksCut;
        long maxExpiryLateMillis;
        long races;
        long drains;
        Isolation isolation;
        final Map<EndReason, Long> ends = new EnumMap<>(EndReason.class);
        final Map<FaultPlan.Fault, Long> faults = new EnumMap<>(FaultPlan.Fault.class);
        long packets;
        List<Long> revocationMillis = List.of();

        void add(FaultInjection.Counts counts) {
            packets += counts.packets();
            counts.faults().forEach((f, n) -> faults.merge(f, n, Long::sum));
        }

        long percentile(double p) {
            if (revocationMillis.isEmpty()) return 0;
            return revocationMillis.get((int) Math.min(revocationMillis.size() - 1, Math.ceil(p * revocationMillis.size()) - 1));
        }

        @Override
        public String toString() {
            long lostAndRecovered = faults.getOrDefault(FaultPlan.Fault.DROP_REQUEST, 0L)
                    + faults.getOrDefault(FaultPlan.Fault.DROP_RESPONSE, 0L) + faults.getOrDefault(FaultPlan.Fault.CORRUPT, 0L)
                    + faults.getOrDefault(FaultPlan.Fault.REORDER, 0L);
            return "isolation " + isolation + ", lease lifetimes " + leaseLifetimes + " (granted " + leasesGranted + ", ends " + ends + ", "
                    + dropped + " dropped unclosed), lease writes " + leaseWrites + ", late accesses tried "
                    + lateAccesses + ", forged accesses tried " + forgedAccesses + ", bytes of reused memory changed "
                    + reusedBytesChanged + ", messages sent " + messagesSent + " delivered " + messagesDelivered
                    + " (twice 0, corrupted 0), packets " + packets + " with faults " + faults
                    + " (lost and recovered " + lostAndRecovered + "), peers killed " + peersKilled + ", links cut "
                    + linksCut + ", owner ends raced by a writer " + races + ", drained " + drains
                    + ", revocation after loss max " + (revocationMillis.isEmpty() ? 0 : revocationMillis.getLast())
                    + " ms p99 " + percentile(0.99) + " ms, latest expiry past deadline+grace " + maxExpiryLateMillis + " ms";
        }
    }
}
