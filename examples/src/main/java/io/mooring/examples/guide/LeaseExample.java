package io.mooring.examples.guide;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import io.mooring.lease.SessionConfig;
import io.mooring.verbs.Access;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.EnumSet;

/**
 * The guide's second example, two processes: {@code owner PORT [DEVICE]} leases blocks of its memory to one peer
 * until the peer leaves; {@code requester HOST:PORT [DEVICE]} leases a block, writes it, reads it back and
 * releases it. DEVICE defaults to {@code soft:soft0}.
 */
public final class LeaseExample {
    public static void main(String[] args) throws Exception {
        long liveBlocks;
        try (DeviceContext device = RdmaDevices.open(args.length > 2 ? args[2] : "soft:soft0");
             ProtectionDomain pd = device.allocateProtectionDomain();
             // MW_BIND: a lease may expose its block through a memory window over the chunk's region.
             RdmaArena arena = RdmaArena.builder(pd)
                     .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build()) {
            SessionConfig config = SessionConfig.of(pd, arena);
            if (args[0].equals("owner")) owner(config, Integer.parseInt(args[1]));
            else requester(config, args[1]);
            liveBlocks = arena.stats().liveBlocks();
        }
        System.out.println(args[0] + ": done, " + liveBlocks + " live blocks, "
                + RdmaDevices.graph().liveCount() + " live resources");
    }

    private static void owner(SessionConfig config, int port) throws Exception {
        try (var server = new ServerSocket(port)) {
            System.out.println("listening on " + server.getLocalPort());
            try (RdmaSession session = RdmaSession.accept(server, config)) {
                // The session's agent thread serves the peer's requests; wait until the peer leaves.
                while (session.lostReason() == null) Thread.sleep(50);
                System.out.println("owner: " + session.leases().stats().released() + " lease(s) released");
            }
        }
    }

    private static void requester(SessionConfig config, String owner) throws Exception {
        int colon = owner.lastIndexOf(':');
        var address = new InetSocketAddress(owner.substring(0, colon),
                Integer.parseInt(owner.substring(colon + 1)));
        try (RdmaSession session = RdmaSession.connect(address, config);
             RemoteSegment lease = session.requestRemote(4096, Duration.ofSeconds(30),
                     EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE));
             Block mine = config.arena().allocate(4096);
             Block back = config.arena().allocate(4096)) {
            mine.segment().fill((byte) 0x42);
            lease.write(mine, 0); // RDMA WRITE into the owner's block...
            lease.read(back, 0);  // ...and READ it back
            if (back.segment().mismatch(mine.segment()) != -1) throw new IllegalStateException("read back differs");
            System.out.println("requester: wrote and read back " + lease.length() + " bytes of lease "
                    + lease.leaseId());
        } // closed in reverse: the blocks, the lease (the owner revokes access, then acknowledges), the session
    }

    private LeaseExample() {}
}
