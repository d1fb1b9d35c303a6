package io.mooring.allocator;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.mooring.allocator.internal.KernelPage;
import io.mooring.testing.NativeTools;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Checks every constant NativeMemory declares against {@code <sys/mman.h>}, and {@link KernelPage} against
 * {@code sysconf(_SC_PAGESIZE)}, compiled with gcc (skipped without).
 */
class NativeMemoryConstantsTest {

    @Test
    void constantsMatchTheCHeaders() throws Exception {
        NativeTools.requireCommand("gcc", "gcc");
        NativeTools.requireHeader("sys/mman.h", "libc6-dev");
        Map<String, Long> c = compileAndRun();
        assertEquals(c.get("KERNEL_PAGE"), KernelPage.SIZE, "KernelPage.SIZE");
        int checked = 1;
        for (Field f : NativeMemory.class.getDeclaredFields()) {
            if (!Modifier.isStatic(f.getModifiers()) || !f.getName().matches("[A-Z_]+")
                    || !(f.getType() == int.class || f.getType() == long.class)) {
                continue;
            }
            f.setAccessible(true);
            long java = ((Number) f.get(null)).longValue();
            assertEquals(c.get(f.getName()), java, f.getName());
            checked++;
        }
        assertEquals(c.size(), checked, "every constant the C program prints is declared and checked");
    }

    private static Map<String, Long> compileAndRun() throws IOException, InterruptedException {
        Path module = Path.of(System.getProperty("basedir", System.getProperty("user.dir")));
        Path source = module.resolve("src/test/c/mman_constants.c");
        Path binary = module.resolve("target/mman_constants");
        run("gcc", "gcc", "-o", binary.toString(), source.toString());
        Process p = new ProcessBuilder(binary.toString()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), out);
        Map<String, Long> values = new HashMap<>();
        for (String line : out.strip().split("\n")) {
            String[] parts = line.split(" ");
            values.put(parts[0], Long.parseLong(parts[1]));
        }
        return values;
    }

    private static void run(String what, String... command) throws IOException, InterruptedException {
        Process p;
        try {
            p = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (IOException e) {
            throw new AssertionError("cannot run " + what + ": " + e.getMessage(), e);
        }
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), () -> what + " failed:\n" + out);
    }
}
