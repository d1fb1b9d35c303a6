package io.mooring.cli;

import io.mooring.allocator.ArenaStats;
import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.ConnectFailedException;
import io.mooring.lease.LeaseEndedException;
import io.mooring.lease.LeaseStats;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import io.mooring.lifecycle.ResourceClosedException;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.WcStatus;
import io.mooring.verbs.WorkCompletionException;
import io.mooring.verbs.WorkRequest;
import io.mooring.verbs.values.Access;
import java.io.PrintStream;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code mooring demo}: the whole remote-lease story between two processes. This process is the requester;
 * it starts a second one as the owner, which leases blocks of its arena over an {@link RdmaSession}.
 */
@Command(name = "demo", description = {"two processes lease, use, release and revoke remote memory (the main job).",
        "Runs an owner process and a requester (this process) and shows: a lease granted, a remote WRITE and READ, a"
                + " release, an expiry after which a late write is rejected while the reused memory stays intact, a"
                + " dropped handle released by the Cleaner, and final stats showing nothing leaked."})
final class Demo extends DeviceCommand {
    static final class Roles extends OneOf<String> {
        Roles() {
            super(List.of("requester", "owner"));
        }
    }

    private static final Set<Access> RW = EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE);

    /** The second process is started as the owner; the option is the demo's own business, so not shown. */
    @Option(names = "--role", hidden = true, defaultValue = "requester", converter = Roles.class)
    private String role;

    @Override
    public Integer call() throws Exception {
        RdmaDevices.Choice device;
        try {
            device = RdmaDevices.choose(provider(), null);
        } catch (IllegalArgumentException e) {
            err().println("mooring demo: " + e.getMessage());
            return 1;
        }
        return role.equals("owner") ? owner(device, out()) : requester(device, err());
    }

    /** A device, PD and arena of this process, in a graph of its own (so the end can show it is empty). */
    private record Side(ResourceGraph graph, DeviceContext context, ProtectionDomain pd, RdmaArena arena) {
        static Side open(RdmaDevices.Choice device) {
            var graph = ResourceGraph.builder().name("demo").build();
            DeviceContext context = device.open(graph);
            ProtectionDomain pd = context.allocateProtectionDomain();
            // No thread caches: a freed block goes straight back to its slab, so the demo can show it reused.
            RdmaArena arena = RdmaArena.builder(pd).chunkSize(4 << 20).shards(1).threadCache(0)
                    .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build();
            return new Side(graph, context, pd, arena);
        }

        void close() {
            arena.close();
            graph.close();
        }
    }

    // ---- the owner (second process) ----------------------------------------------------------------------------

    private static int owner(RdmaDevices.Choice device, PrintStream out) throws Exception {
        Side side = Side.open(device);
        // Step 7 shows a leased block reused: message buffers of 1 KiB keep out of the 4 KiB class, and one session
        // at a time makes the second wait until the first one's leases are revoked and their blocks back.
        try (var endpoint = RdmaEndpoint.builder(side.pd, side.arena).maxMessageSize(1024).maxSessions(1).build();
             var listener = endpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
            out.println("listening on " + listener.address().getPort());
            out.flush();
            for (int n = 1; n <= 2; n++) { // the requester comes back once after its first session breaks
                try (RdmaSession session = listener.acceptAsync().get()) {
                    out.println("session " + n + " up on " + side.context.device() + ", leases isolated by "
                            + session.leases().isolation());
                    while (session.lostReason() == null) Thread.sleep(20); // until the requester leaves
                    LeaseStats s = session.leases().stats();
                    out.println("session " + n + " ended (" + session.lostReason().replaceFirst(".*lost: ", "")
                            + "): leases " + s.granted() + " granted, " + s.released() + " released, " + s.expired()
                            + " expired, " + s.revoked() + " revoked, " + s.active() + " active");
                }
            }
        }
        side.arena.flushThreadCaches();
        ArenaStats a = side.arena.stats();
        out.println("arena: " + a.liveBlocks() + " live blocks, " + a.registrations() + " registrations");
        side.close();
        out.println("resource graph: " + side.graph.liveCount() + " live");
        return 0;
    }

    // ---- the requester (this process) --------------------------------------------------------------------------

    /**
     * Connects again after a session that ended in an access error: the owner bars a peer whose session was lost for a
     * while (100 ms, doubling with each loss), so the first attempts may be refused.
     */
    private RdmaSession reconnect(RdmaEndpoint endpoint, InetSocketAddress at) throws Exception {
        for (int attempt = 1; ; attempt++) {
            try {
                return endpoint.connectAsync(at).get();
            } catch (java.util.concurrent.ExecutionException e) {
                if (!(e.getCause() instanceof ConnectFailedException) || attempt == 20) throw e;
                out().println("  (the owner does not take the new session yet: its first one is still ending, or it"
                        + " bars a peer for a while after a lost session; trying again)");
                Thread.sleep(100);
            }
        }
    }

    private int requester(RdmaDevices.Choice device, PrintStream err) throws Exception {
        try (var owner = ListeningProcess.start("owner", out(), "demo", "--role", "owner", "--provider",
                device.provider())) {
            Side side = Side.open(device);
            var at = new InetSocketAddress(InetAddress.getLoopbackAddress(), owner.port());
            Reuse reuse;
            boolean ok;
            try (var endpoint = RdmaEndpoint.builder(side.pd, side.arena).build()) {
                try (RdmaSession session = endpoint.connectAsync(at).get()) {
                    reuse = story(session, side);
                }
                try (RdmaSession session = reconnect(endpoint, at)) {
                    ok = reuse != null && intact(session, side, reuse);
                }
            }
            int ownerStatus = owner.finish();
            if (ownerStatus < 0) {
                err.println("mooring demo: the owner did not finish");
                return 1;
            }
            side.arena.flushThreadCaches();
            out().println("requester arena: " + side.arena.stats().liveBlocks() + " live blocks");
            side.close();
            out().println("requester resource graph: " + side.graph.liveCount() + " live");
            boolean clean = ok && ownerStatus == 0 && side.graph.liveCount() == 0;
            out().println(clean ? "demo complete: every lease ended, every block returned, nothing leaked"
                    : "demo FAILED (see above)");
            return clean ? 0 : 1;
        } catch (java.io.IOException e) {
            err.println("mooring demo: " + e.getMessage());
            return 1;
        }
    }

    /** The block the expired lease had, reused by the next lease, and what that lease wrote into it. */
    private record Reuse(long address, byte value) {}

    private Reuse story(RdmaSession session, Side side) throws Exception {
        try (Block mine = side.arena.allocate(4096); Block back = side.arena.allocate(4096)) {
            step("1. the requester's arena serves blocks from registered chunks");
            List<Block> many = new java.util.ArrayList<>();
            for (int i = 0; i < 1000; i++) many.add(side.arena.allocate(512));
            many.forEach(Block::close);
            ArenaStats s = side.arena.stats();
            long served = s.classes().stream().mapToLong(ArenaStats.ClassStats::allocations).sum();
            say(served + " blocks served with " + s.registrations() + " registration(s): "
                    + (served - s.registrations()) + " ibv_reg_mr calls avoided");

            step("2. a lease: the owner exposes one 4 KiB block of its arena, nothing around it");
            RemoteSegment lease = session.requestRemote(4096, Duration.ofSeconds(30), RW);
            say("granted " + lease);

            step("3. remote WRITE, then READ back");
            mine.segment().fill((byte) 0x42);
            lease.write(mine, 0);
            lease.read(back, 0);
            boolean same = back.segment().mismatch(mine.segment()) == -1;
            say("wrote 4096 bytes of 0x42, read them back: " + (same ? "identical" : "DIFFERENT"));

            step("4. release: the owner revokes access before it reuses the block");
            lease.close();
            say("RELEASE acknowledged; the segment refuses use: " + refused(() -> lease.write(mine, 0)));

            step("5. a handle dropped without close() is released through the Cleaner");
            dropOne(session);
            for (int i = 0; i < 250 && session.leakedSegments() == 0; i++) {
                System.gc();
                Thread.sleep(20);
            }
            say(session.leakedSegments() + " dropped segment released by the Cleaner (and logged as a leak)");

            step("6. a lease that expires, and a late write through its key");
            RemoteSegment expiring = session.requestRemote(4096, Duration.ofMillis(300), RW);
            long address = expiring.address();
            int staleKey = expiring.rkey();
            while (!expiring.remaining().isNegative()) Thread.sleep(10);
            say("after 300 ms the segment refuses use locally: " + refused(() -> expiring.write(mine, 0)));
            expiring.revoked().get(10, TimeUnit.SECONDS); // the owner's expiry (after its grace) asks this side to stop
            Thread.sleep(250); // this side releases at once; the owner revokes the key, then the block is free
            RemoteSegment next = session.requestRemote(4096, Duration.ofSeconds(30), RW);
            say("the next lease got the " + (next.address() == address ? "same" : "a different")
                    + " block; it writes 0x17 into it");
            mine.segment().fill((byte) 0x17);
            next.write(mine, 0);
            mine.segment().fill((byte) 0x66);
            WcStatus late = rawWrite(session, mine, address, staleKey);
            say("a late write of 0x66 with the expired lease's key, straight on the QP: " + late);
            say("(an access error moves both QPs to ERROR: this session is over, the owner revokes its leases)");
            boolean ok = same && late == WcStatus.REM_ACCESS_ERR && session.leakedSegments() == 1
                    && next.address() == address;
            return ok ? new Reuse(address, (byte) 0x17) : null;
        }
    }

    /** In a new session: the reused block still holds what its own lease wrote, not the late write. */
    private boolean intact(RdmaSession session, Side side, Reuse reuse) {
        step("7. a new session: the block the late write aimed at holds what its rightful lease wrote");
        RemoteSegment again = session.requestRemote(4096, Duration.ofSeconds(30), RW);
        try (Block back = side.arena.allocate(4096)) {
            again.read(back, 0);
            byte value = back.segment().get(ValueLayout.JAVA_BYTE, 0);
            boolean same = again.address() == reuse.address();
            boolean ok = same && value == reuse.value() && back.segment().get(ValueLayout.JAVA_BYTE, 7) == reuse.value();
            say("block 0x" + Long.toHexString(again.address()) + " starts with 0x" + Integer.toHexString(value & 0xff)
                    + (ok ? ": the late write never landed" : ": UNEXPECTED"));
            again.close();
            return ok;
        }
    }

    private static void dropOne(RdmaSession session) {
        session.requestRemote(64, Duration.ofMinutes(1), RW);
    }

    /** A WRITE straight on the session's QP, bypassing every check of the lease API. */
    private static WcStatus rawWrite(RdmaSession session, Block src, long address, int rkey) throws Exception {
        try {
            return session.queuePair().postAsync(WorkRequest.write(src.region(), src.regionOffset(), 8)
                    .remote(address, rkey)).get(30, TimeUnit.SECONDS).status();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof WorkCompletionException wce) return wce.status();
            throw e;
        }
    }

    private static String refused(Runnable use) {
        try {
            use.run();
            return "NOT refused";
        } catch (ResourceClosedException | LeaseEndedException e) {
            return "refused (" + e.getMessage() + ")";
        }
    }

    private void step(String title) {
        out().println(title);
    }

    private void say(String line) {
        out().println("   " + line);
    }
}
