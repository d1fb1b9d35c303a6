package io.mooring.chaos;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaSession;
import io.mooring.lease.RemoteSegment;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A peer process for {@link TwoProcessTest}, to be killed: on device {@code device} ({@code provider:name}) it
 * connects to the owner at {@code host port}, takes {@code leases} leases of 4 KiB, prints {@code READY id,id,...},
 * then writes through them and sends messages without end — so a SIGKILL finds it mid-lease and mid-message.
 * Arguments: {@code host port leases device}.
 */
public final class PeerProcess {
    private PeerProcess() {
    }

    public static void main(String[] args) throws Exception {
        var graph = ResourceGraph.builder().name("peer-process").build();
        ProtectionDomain pd = RdmaDevices.open(args[3], graph).allocateProtectionDomain();
        RdmaArena arena = ChaosRun.arena(pd);
        RdmaEndpoint endpoint = RdmaEndpoint.builder(pd, arena).build();
        RdmaSession session = endpoint.connectAsync(new InetSocketAddress(args[0], Integer.parseInt(args[1]))).join();
        List<RemoteSegment> leases = new ArrayList<>();
        for (int i = 0; i < Integer.parseInt(args[2]); i++) {
            leases.add(session.requestRemote(4096, Duration.ofMinutes(5), ChaosRun.RW));
        }
        System.out.println("READY " + String.join(",", leases.stream().map(l -> Long.toString(l.leaseId())).toList()));
        System.out.flush();
        Block data = arena.allocateShared(4096, 8);
        Block message = arena.allocateShared(1024, 8);
        for (long seq = 1; ; seq++) {
            data.segment().fill((byte) seq);
            leases.get((int) (seq % leases.size())).write(data, 0);
            Payload.write(message.segment(), 1024, seq);
            session.send(message);
        }
    }
}
