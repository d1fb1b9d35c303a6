package io.mooring.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mooring.regcache.RegistrationCacheStats;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The registration-hit benchmark driven the way JMH drives it, without measuring: it measures hits only. */
class RegistrationHitTest {
    private static final int OPERATIONS = 50;

    @ParameterizedTest
    @ValueSource(strings = {"own", "shared"})
    void everyMeasuredOperationIsAHit(String region) throws Exception {
        var cache = new RegistrationHit.Cache();
        cache.open();
        var threads = new Thread[2];
        for (int t = 0; t < threads.length; t++) {
            threads[t] = Thread.ofPlatform().start(() -> {
                var benchmark = new RegistrationHit();
                benchmark.region = region;
                benchmark.pick(cache);
                for (int i = 0; i < OPERATIONS; i++) benchmark.hit(cache);
            });
        }
        for (Thread t : threads) t.join();
        RegistrationCacheStats before = cache.cache.stats();
        cache.close();
        assertEquals(region.equals("own") ? 2 : 1, before.misses(), before::toString);
        assertEquals(2 * OPERATIONS + (region.equals("own") ? 0 : 3), before.hits(), before::toString);
        assertEquals(0, before.inUseCount());
    }
}
