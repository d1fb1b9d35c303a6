package io.mooring.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.testing.ChildJvm;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A JVM that denies Mooring native access gets a refusal naming the flags to add — when it opens a device (verbs) or
 * builds an arena (allocator), not as an ExceptionInInitializerError at its first allocation — and with the flags the
 * same program runs without a warning.
 */
class NativeAccessTest {
    private static final int DENIED = 3;
    private static final String DENY = "--illegal-native-access=deny";

    @Test
    void onTheClassPathTheFirstDeviceOpenedNamesTheFlags() throws Exception {
        Result denied = run(ChildJvm.command(List.of(DENY), NativeAccessTest.class));
        assertEquals(DENIED, denied.status(), denied::output);
        assertTrue(denied.output().startsWith("IllegalCallerException: a verbs device reaches memory by address"
                + " through FFM, and this JVM denies it native access: grant native access"), denied::output);
        assertTrue(denied.output().contains("--enable-native-access=ALL-UNNAMED on the class path"), denied::output);

        Result granted = run(ChildJvm.command(List.of(DENY, "--enable-native-access=ALL-UNNAMED"),
                NativeAccessTest.class));
        assertEquals(0, granted.status(), granted::output);
        assertEquals("allocated and freed 64 bytes\n", granted.output(), "no warning either");
    }

    @Test
    void onTheModulePathEachModuleNeedsItsOwnGrant() throws Exception {
        Result verbsOnly = run(ChildJvm.moduleCommand(List.of(DENY, "--enable-native-access=io.mooring.verbs"),
                NativeAccessTest.class));
        assertEquals(DENIED, verbsOnly.status(), verbsOnly::output);
        assertTrue(verbsOnly.output().startsWith("IllegalCallerException: the allocator calls the kernel through FFM"
                + " (mmap, getpagesize), and this JVM denies it native access"), verbsOnly::output);
        assertTrue(verbsOnly.output().contains("--enable-native-access=io.mooring.verbs,io.mooring.allocator on the"
                + " module path"), verbsOnly::output);

        Result both = run(ChildJvm.moduleCommand(
                List.of(DENY, "--enable-native-access=io.mooring.verbs,io.mooring.allocator"), NativeAccessTest.class));
        assertEquals(0, both.status(), both::output);
        assertEquals("allocated and freed 64 bytes\n", both.output(), "no warning either");
    }

    private record Result(int status, String output) {}

    private static Result run(List<String> command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the child did not exit: " + out);
        return new Result(p.exitValue(), out);
    }

    /** The child: an arena on soft0, one block. */
    public static void main(String[] args) {
        try (var fx = new ArenaFixture(); RdmaArena arena = fx.arena().build()) {
            arena.allocate(64).close();
            System.out.println("allocated and freed 64 bytes");
        } catch (IllegalCallerException e) {
            System.out.println("IllegalCallerException: " + e.getMessage());
            System.exit(DENIED);
        }
    }
}
