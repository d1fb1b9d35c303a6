package io.mooring.examples.guide;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import io.mooring.verbs.values.Access;
import java.net.InetSocketAddress;
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
             // MW_BIND: a lease may expose its block through a memory window over the chunk's region (without
             // it, as a client that never leases may, each lease costs a registration of its own).
             RdmaArena arena = RdmaArena.builder(pd)
                     .access(EnumSet.of(Access.LOCAL_WRITE, Access.MW_BIND)).build()) {
            try (RdmaEndpoint endpoint = RdmaEndpoint.builder(pd, arena).build()) {
                if (args[0].equals("owner")) owner(endpoint, Integer.parseInt(args[1]));
                else requester(endpoint, args[1]);
            }
            liveBlocks = arena.stats().liveBlocks();
        }
        System.out.println(args[0] + ": done, " + liveBlocks + " live blocks, "
                + RdmaDevices.graph().liveCount() + " live resources");
    }

    private static void owner(RdmaEndpoint endpoint, int port) throws Exception {
        try (RdmaListener listener = endpoint.listen(port)) {
            System.out.println("listening on " + listener.address().getPort());
            try (RdmaSession session = listener.acceptAsync().get()) {
                session.closed().get(); // the session's agent serves the peer's requests until the peer leaves
                System.out.println("owner: " + session.leases().stats().released() + " lease(s) released");
            }
        }
    }

    private static void requester(RdmaEndpoint endpoint, String owner) throws Exception {
        int colon = owner.lastIndexOf(':');
        var address = new InetSocketAddress(owner.substring(0, colon),
                Integer.parseInt(owner.substring(colon + 1)));
        try (RdmaSession session = endpoint.connectAsync(address).get();
             RemoteSegment lease = session.requestRemote(4096, Duration.ofSeconds(30),
                     EnumSet.of(Access.REMOTE_READ, Access.REMOTE_WRITE));
             Block mine = endpoint.arena().allocate(4096);
             Block back = endpoint.arena().allocate(4096)) {
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
