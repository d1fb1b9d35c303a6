package io.mooring.verbs.ibv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.mooring.testing.NativeTools;
import java.io.IOException;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.PaddingLayout;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Verifies {@link IbvStructs} against the C compiler's view of the installed {@code <infiniband/verbs.h>}:
 * {@code src/test/c/ibv_layout.c} is compiled with gcc and run, and its output is compared with what the Java
 * class declares. The list of checks comes from the Java side (every layout, every named member, every
 * numeric constant, found by reflection), so nothing is listed twice in Java.
 *
 * <p>Needs gcc and libibverbs-dev: where they are missing it skips naming them, and fails under
 * {@code -Dmooring.native.required=true} (CI installs them).
 */
class IbvStructsLayoutTest {

    private static final Path MODULE_DIR = Path.of(System.getProperty("basedir", System.getProperty("user.dir")));
    private static final Path SOURCE = MODULE_DIR.resolve("src/test/c/ibv_layout.c");
    private static final Path EXECUTABLE = MODULE_DIR.resolve("target/ibv-layout/ibv_layout");

    private static CFacts c;
    private static Comparison comparison;

    @BeforeAll
    static void compareWithCProgram() throws IOException, InterruptedException, IllegalAccessException {
        NativeTools.requireCommand("gcc", "gcc");
        NativeTools.requireHeader("infiniband/verbs.h", "libibverbs-dev");
        c = CFacts.parse(run(compile()));
        comparison = new Comparison();
        comparison.compareAll();
    }

    @Test
    void everyJavaDeclarationMatchesC() {
        assertTrue(comparison.checks > 0, "found nothing to check in IbvStructs");
        assertTrue(comparison.mismatches.isEmpty(), () -> comparison.mismatches.size() + " of " + comparison.checks
                + " checks of IbvStructs against <infiniband/verbs.h> failed:\n  "
                + String.join("\n  ", comparison.mismatches));
    }

    @Test
    void everyCFactIsDeclaredInJava() {
        Set<String> unused = new TreeSet<>(c.keys());
        unused.removeAll(comparison.used);
        assertTrue(unused.isEmpty(), () -> "ibv_layout.c prints facts that IbvStructs does not declare"
                + " (declare them or stop printing them):\n  " + String.join("\n  ", unused));
    }

    // ---------------------------------------------------------------------------------------------------------

    /** Walks IbvStructs and compares each declaration with the C facts. */
    private static final class Comparison {
        final List<String> mismatches = new ArrayList<>();
        final Set<String> used = new HashSet<>();
        int checks;

        void compareAll() throws IllegalAccessException {
            Map<String, GroupLayout> layouts = new LinkedHashMap<>();
            Map<String, Number> constants = new LinkedHashMap<>();
            for (Field field : IbvStructs.class.getDeclaredFields()) {
                int mods = field.getModifiers();
                if (!Modifier.isStatic(mods) || !Modifier.isFinal(mods) || Modifier.isPrivate(mods)) {
                    continue;
                }
                Object value = field.get(null);
                if (value instanceof GroupLayout layout) {
                    layouts.put(field.getName(), layout);
                } else if (field.getType() == int.class || field.getType() == long.class) {
                    constants.put(field.getName(), (Number) value);
                }
            }
            Set<MemoryLayout> declared = new HashSet<>();
            layouts.values().forEach(layout -> declared.add(layout.withoutName()));

            layouts.forEach((javaName, layout) -> compareLayout(javaName, layout, declared));
            constants.forEach((javaName, value) -> compareConstant(javaName, value.longValue()));
            compareWcStatusNames();
        }

        private void compareLayout(String javaName, GroupLayout layout, Set<MemoryLayout> declared) {
            if (layout.name().isEmpty()) {
                mismatches.add("IbvStructs." + javaName + " has no name; give it its C tag with withName(...)");
                return;
            }
            String tag = layout.name().get();
            String key = "size " + tag;
            long[] size = c.sizes().get(tag);
            if (size == null) {
                mismatches.add("ibv_layout.c prints no size for " + tag + " (IbvStructs." + javaName + ")");
                return;
            }
            used.add(key);
            check("sizeof " + tag, layout.byteSize(), size[0]);
            check("alignof " + tag, layout.byteAlignment(), size[1]);
            compareMembers(layout, tag, "", layout, declared);
        }

        /**
         * Compares each named member, descending into nested groups that are not declared layouts of their own
         * (those are checked at top level) and into anonymous groups without extending the path, as C does.
         */
        private void compareMembers(GroupLayout top, String tag, String prefix, GroupLayout group,
                                    Set<MemoryLayout> declared) {
            for (MemoryLayout member : group.memberLayouts()) {
                if (member instanceof PaddingLayout) {
                    continue;
                }
                if (member.name().isEmpty()) {
                    if (member instanceof GroupLayout anonymous) {
                        compareMembers(top, tag, prefix, anonymous, declared);
                    } else {
                        mismatches.add(tag + ": unnamed member " + member + " after '" + prefix + "'");
                    }
                    continue;
                }
                String path = prefix + member.name().get();
                String field = tag + "." + path;
                long[] cField = c.fields().get(field);
                if (cField == null) {
                    mismatches.add("ibv_layout.c prints no offsetof for " + field);
                    continue;
                }
                used.add("field " + field);
                check("offsetof " + field, IbvStructs.offsetOf(top, path), cField[0]);
                check("sizeof " + field, member.byteSize(), cField[1]);
                if (member instanceof GroupLayout nested && !declared.contains(nested.withoutName())) {
                    compareMembers(top, tag, path + ".", nested, declared);
                }
            }
        }

        private void compareConstant(String javaName, long value) {
            CFacts.Named named = c.named().get(javaName);
            if (named == null) {
                mismatches.add("IbvStructs." + javaName + " has no counterpart in ibv_layout.c (print `const "
                        + javaName + "`, or a field whose path reads " + javaName + ")");
                return;
            }
            used.add(named.key());
            check("IbvStructs." + javaName + " (" + named.key() + ")", value, named.value());
        }

        /** Every ibv_wc_status value up to the last declared one has its C name, and no more are named. */
        private void compareWcStatusNames() {
            for (int status = 0; status <= IbvStructs.IBV_WC_GENERAL_ERR; status++) {
                String name = IbvStructs.wcStatusName(status);
                CFacts.Named named = c.named().get(name);
                if (named == null) {
                    mismatches.add("wcStatusName(" + status + ") = " + name + ", which ibv_layout.c does not print");
                } else {
                    check("wcStatusName(" + status + ") = " + name, status, named.value());
                }
            }
            int next = IbvStructs.IBV_WC_GENERAL_ERR + 1;
            checks++;
            if (!IbvStructs.wcStatusName(next).equals("IBV_WC_STATUS(" + next + ")")) {
                mismatches.add("wcStatusName(" + next + ") names a status past IBV_WC_GENERAL_ERR; declare its"
                        + " constant too: " + IbvStructs.wcStatusName(next));
            }
        }

        private void check(String what, long java, long cValue) {
            checks++;
            if (java != cValue) {
                mismatches.add(what + ": Java " + java + ", C " + cValue);
            }
        }
    }

    /** The parsed output of ibv_layout.c. */
    private record CFacts(Map<String, long[]> sizes, Map<String, long[]> fields, Map<String, Named> named,
                          Set<String> keys) {

        /** A value Java constants can be named after: a const, or a field offset under its canonical name. */
        record Named(String key, long value) {
        }

        static CFacts parse(String output) {
            Map<String, long[]> sizes = new HashMap<>();
            Map<String, long[]> fields = new HashMap<>();
            Map<String, Named> named = new HashMap<>();
            Set<String> keys = new HashSet<>();
            for (String line : output.strip().split("\n")) {
                String[] parts = line.strip().split(" ");
                String key = parts[0] + " " + parts[1];
                if (!keys.add(key)) {
                    fail("ibv_layout.c prints " + key + " twice");
                }
                switch (parts[0]) {
                    case "size" -> sizes.put(parts[1], new long[] {Long.parseLong(parts[2]), Long.parseLong(parts[3])});
                    case "field" -> {
                        long offset = Long.parseLong(parts[2]);
                        fields.put(parts[1], new long[] {offset, Long.parseLong(parts[3])});
                        putNamed(named, canonicalName(parts[1]), new Named(key, offset));
                    }
                    case "const" -> putNamed(named, parts[1], new Named(key, Long.parseLong(parts[2])));
                    default -> fail("unexpected line from ibv_layout.c: " + line);
                }
            }
            return new CFacts(sizes, fields, named, keys);
        }

        /** {@code ibv_send_wr.wr.rdma.rkey} is named {@code SEND_WR_WR_RDMA_RKEY} in IbvStructs. */
        private static String canonicalName(String path) {
            String withoutPrefix = path.startsWith("ibv_") ? path.substring("ibv_".length()) : path;
            return withoutPrefix.replace('.', '_').toUpperCase(Locale.ROOT);
        }

        private static void putNamed(Map<String, Named> named, String name, Named value) {
            Named previous = named.put(name, value);
            if (previous != null) {
                fail("ibv_layout.c: " + previous.key() + " and " + value.key() + " would both be IbvStructs." + name);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------------

    private static Path compile() throws IOException, InterruptedException {
        if (!Files.isRegularFile(SOURCE)) {
            fail("cannot find " + SOURCE + "; run the test from the verbs module (mvn -pl verbs) or set -Dbasedir");
        }
        Files.createDirectories(EXECUTABLE.getParent());
        Result gcc = exec("gcc", List.of("gcc", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
                "-o", EXECUTABLE.toString(), SOURCE.toString()));
        if (gcc.exitCode() != 0) fail("gcc could not compile " + SOURCE + ":\n" + gcc.output());
        return EXECUTABLE;
    }

    private static String run(Path executable) throws IOException, InterruptedException {
        Result result = exec("ibv_layout", List.of(executable.toString()));
        assertEquals(0, result.exitCode(), () -> executable + " failed:\n" + result.output());
        return result.output();
    }

    private record Result(int exitCode, String output) {
    }

    /** Runs a command with its output captured in target/ibv-layout/{name}.out, so the file can be read after. */
    private static Result exec(String name, List<String> command) throws IOException, InterruptedException {
        Path log = EXECUTABLE.resolveSibling(name + ".out");
        Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            fail(String.join(" ", command) + " did not finish within 60 s");
        }
        return new Result(process.exitValue(), Files.readString(log));
    }
}
