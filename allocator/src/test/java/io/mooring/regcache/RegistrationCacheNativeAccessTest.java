package io.mooring.regcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.lifecycle.ClosePolicy;
import io.mooring.testing.ChildJvm;
import java.lang.foreign.Arena;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A JVM that denies the allocator module native access is refused when it builds a registration cache, with the
 * flags to add, not at its first registration; with the flags the same program runs without a warning.
 */
class RegistrationCacheNativeAccessTest {
    private static final int DENIED = 3;
    private static final String DENY = "--illegal-native-access=deny";

    @Test
    void buildingTheCacheNamesTheFlagsWhenTheModuleIsNotGranted() throws Exception {
        String verbsOnly = childOutput(List.of(DENY, "--enable-native-access=io.mooring.verbs"), DENIED);
        assertTrue(verbsOnly.startsWith("IllegalCallerException: the registration cache widens segments to whole"
                + " pages through FFM, and this JVM denies it native access"), verbsOnly);
        assertTrue(verbsOnly.contains("--enable-native-access=io.mooring.verbs,io.mooring.allocator"), verbsOnly);

        String both = childOutput(List.of(DENY, "--enable-native-access=io.mooring.verbs,io.mooring.allocator"), 0);
        assertEquals("registered and released 64 bytes\n", both, "no warning either");
    }

    private static String childOutput(List<String> options, int status) throws Exception {
        Process child = new ProcessBuilder(ChildJvm.moduleCommand(options, RegistrationCacheNativeAccessTest.class))
                .redirectErrorStream(true).start();
        String out = new String(child.getInputStream().readAllBytes());
        assertTrue(child.waitFor(60, TimeUnit.SECONDS), () -> "the child did not exit: " + out);
        assertEquals(status, child.exitValue(), out);
        return out;
    }

    /** The child: a cache on soft0, one registration. */
    public static void main(String[] args) {
        try (var fx = new PdFixture(ClosePolicy.DEFERRED); Arena memory = Arena.ofConfined();
             RegistrationCache cache = RegistrationCache.builder(fx.pd).build()) {
            cache.acquire(memory.allocate(64)).close();
            System.out.println("registered and released 64 bytes");
        } catch (IllegalCallerException e) {
            System.out.println("IllegalCallerException: " + e.getMessage());
            System.exit(DENIED);
        }
    }
}
