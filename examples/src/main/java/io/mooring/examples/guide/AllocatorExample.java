package io.mooring.examples.guide;

import io.mooring.allocator.Block;
import io.mooring.allocator.RdmaArena;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.ValueLayout;

/** The guide's first example: registered blocks from an arena, used and given back. */
public final class AllocatorExample {
    private static final MemoryLayout RECORD = MemoryLayout.structLayout(
            ValueLayout.JAVA_LONG.withName("key"), ValueLayout.JAVA_LONG.withName("value"));

    public static void main(String[] args) {
        try (DeviceContext device = RdmaDevices.open("soft:soft0");
             ProtectionDomain pd = device.allocateProtectionDomain();
             RdmaArena arena = RdmaArena.builder(pd).build()) {
            for (long i = 0; i < 1_000; i++) {
                try (Block block = arena.allocate(RECORD)) { // a registered slice: lkey and rkey ready for the NIC
                    block.segment().set(ValueLayout.JAVA_LONG, 0, i);
                    block.segment().set(ValueLayout.JAVA_LONG, 8, i * i);
                }
            }
            System.out.println("1000 blocks served with " + arena.stats().registrations() + " registration(s)");
        }
    }

    private AllocatorExample() {}
}
