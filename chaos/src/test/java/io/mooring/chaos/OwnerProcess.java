package io.mooring.chaos;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.lease.RdmaEndpoint;
import io.mooring.lease.RdmaListener;
import io.mooring.lifecycle.ResourceGraph;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * An owner process for {@link TwoProcessTest}: it listens, prints {@code PORT n}, accepts every session (each peer's
 * REQUESTs are served by its agent), and keeps {@code blocks} blocks of its own filled with 0x77. On {@code CHECK}
 * (stdin) it prints {@code INTACT} or {@code CHANGED n} for those blocks — what an old key must not reach.
 */
public final class OwnerProcess {
    private OwnerProcess() {
    }

    public static void main(String[] args) throws Exception {
        var graph = ResourceGraph.builder().name("owner-process").build();
        ProtectionDomain pd = RdmaDevices.open("soft:soft0", graph).allocateProtectionDomain();
        RdmaArena arena = ChaosRun.arena(pd);
        List<Block> blocks = new ArrayList<>();
        for (int i = 0; i < Integer.parseInt(args[0]); i++) {
            Block b = arena.allocateShared(4096, 8);
            b.segment().fill((byte) 0x77);
            blocks.add(b);
        }
        RdmaEndpoint endpoint = RdmaEndpoint.builder(pd, arena).failureBackoff(Duration.ZERO).build();
        RdmaListener listener = endpoint.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        Thread.ofVirtual().start(() -> {
            while (true) listener.acceptAsync().join();
        });
        System.out.println("PORT " + listener.address().getPort());
        System.out.flush();
        var in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            if (!line.equals("CHECK")) continue;
            long changed = 0;
            for (Block b : blocks) {
                for (byte x : b.segment().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)) if (x != 0x77) changed++;
            }
            System.out.println(changed == 0 ? "INTACT" : "CHANGED " + changed);
            System.out.flush();
        }
    }
}
