package io.mooring.examples.guide;

import io.mooring.regcache.Registration;
import io.mooring.regcache.RegistrationCache;
import io.mooring.regcache.RegistrationCacheStats;
import io.mooring.verbs.DeviceContext;
import io.mooring.verbs.ProtectionDomain;
import io.mooring.verbs.RdmaDevices;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** The guide's registration cache: memory the application allocated itself, registered once and reused. */
public final class RegistrationCacheExample {
    public static void main(String[] args) {
        try (DeviceContext device = RdmaDevices.open("soft:soft0");
             ProtectionDomain pd = device.allocateProtectionDomain();
             RegistrationCache cache = RegistrationCache.builder(pd).build();
             Arena memory = Arena.ofShared()) {
            MemorySegment pool = memory.allocate(1 << 20); // your memory: a buffer pool, a mapped file, ...
            Registration whole = cache.acquire(pool); // registers the pool's pages once
            for (int i = 0; i < 1_000; i++) {
                MemorySegment message = pool.asSlice(i * 1024L, 1024);
                try (Registration reg = cache.acquire(message)) { // a hit: the pool's region, its own offset
                    message.set(ValueLayout.JAVA_LONG, 0, reg.offset()); // a work request names lkey + offset
                }
            }
            whole.close();
            RegistrationCacheStats stats = cache.stats();
            System.out.println(stats.hits() + stats.misses() + " acquisitions, " + stats.misses() + " registration(s)");
            cache.invalidate(pool); // before the memory is freed: deregisters what covers it
        }
    }

    private RegistrationCacheExample() {}
}
