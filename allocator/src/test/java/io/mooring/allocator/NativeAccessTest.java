package io.mooring.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.testing.ChildJvm;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A JVM that denies Mooring native access gets a refusal naming the flag to add when it builds an arena — not an
 * ExceptionInInitializerError at its first allocation — and with the flag the same program runs without a warning.
 */
class NativeAccessTest {
    private static final int DENIED = 3;

    @Test
    void aDeniedJvmIsToldWhichFlagToAdd() throws Exception {
        Result denied = run("--illegal-native-access=deny");
        assertEquals(DENIED, denied.status(), denied::output);
        assertTrue(denied.output().startsWith("IllegalCallerException: the allocator calls the kernel through FFM"
                + " (mmap, getpagesize), and this JVM denies it native access: grant native access"), denied::output);
        assertTrue(denied.output().contains("--enable-native-access=ALL-UNNAMED on the class path"), denied::output);

        Result granted = run("--illegal-native-access=deny", "--enable-native-access=ALL-UNNAMED");
        assertEquals(0, granted.status(), granted::output);
        assertEquals("allocated and freed 64 bytes\n", granted.output(), "no warning either");
    }

    private record Result(int status, String output) {}

    private static Result run(String... jvmOptions) throws Exception {
        Process p = new ProcessBuilder(ChildJvm.command(List.of(jvmOptions), NativeAccessTest.class))
                .redirectErrorStream(true).start();
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
