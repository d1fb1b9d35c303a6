package io.mooring.examples.guide;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.testing.ChildJvm;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The guide's examples are code that cannot drift from it: docs/guide.md shows every file of this package verbatim,
 * each in the {@code java} block right after a line {@code <!-- examples/src/main/java/.../File.java -->}, and each
 * example runs in child JVMs with the flags and the output the guide gives.
 */
@Timeout(value = 10, unit = TimeUnit.MINUTES) // a backstop: every wait below is bounded on its own
class GuideTest {
    private static final Path ROOT = Path.of(System.getProperty("basedir", ".")).toAbsolutePath().getParent();
    private static final String EXAMPLES = "examples/src/main/java/io/mooring/examples/guide";
    private static final Pattern MARKER = Pattern.compile("<!-- (examples/\\S+\\.java) -->");
    /** The guide's class-path flag; C1 only and one GC thread start the children faster on a small, busy machine. */
    private static final List<String> JVM = List.of("--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
            "-XX:+UseSerialGC");
    private static final long WAIT_SECONDS = 180;

    // ---- the guide shows the files as they are -------------------------------------------------------------------

    @Test
    void theGuideShowsEveryExampleFileExactly() throws IOException {
        Map<String, String> shown = shownFiles(Files.readString(ROOT.resolve("docs/guide.md")));
        for (var e : shown.entrySet()) {
            Path file = ROOT.resolve(e.getKey());
            assertTrue(Files.isRegularFile(file), "docs/guide.md shows " + e.getKey() + ", which does not exist");
            assertEquals(Files.readString(file), e.getValue(), "docs/guide.md's copy of " + e.getKey());
        }
        var examples = new TreeSet<String>();
        try (Stream<Path> files = Files.list(ROOT.resolve(EXAMPLES))) {
            files.forEach(f -> examples.add(EXAMPLES + "/" + f.getFileName()));
        }
        assertEquals(examples, new TreeSet<>(shown.keySet()), "the example files docs/guide.md shows");
    }

    @Test
    void aMarkerTakesTheJavaBlockRightAfterIt() {
        String guide = """
                ```java
                unmarked blocks are prose
                ```
                <!-- examples/A.java -->
                ```java
                class A {}
                ```
                """;
        assertEquals(Map.of("examples/A.java", "class A {}\n"), shownFiles(guide));
        assertThrows(AssertionError.class, () -> shownFiles("<!-- examples/A.java -->\nclass A {}\n"), "no block");
        assertThrows(AssertionError.class, () -> shownFiles("<!-- examples/A.java -->\n```java\nclass A {}\n"),
                "an unclosed block");
        assertThrows(AssertionError.class, () -> shownFiles(guide + guide), "a file shown twice");
    }

    /** Each marked file and the text of the {@code java} block that follows its marker. */
    static Map<String, String> shownFiles(String guide) {
        List<String> lines = guide.lines().toList();
        var shown = new LinkedHashMap<String, String>();
        for (int i = 0; i < lines.size(); i++) {
            Matcher marker = MARKER.matcher(lines.get(i).strip());
            if (!marker.matches()) continue;
            String file = marker.group(1);
            if (i + 1 >= lines.size() || !lines.get(i + 1).equals("```java")) {
                throw new AssertionError("line " + (i + 2) + ": the marker of " + file + " must be followed by ```java");
            }
            var text = new StringBuilder();
            int end = i + 2;
            for (; end < lines.size() && !lines.get(end).equals("```"); end++) text.append(lines.get(end)).append('\n');
            if (end == lines.size()) throw new AssertionError("the block of " + file + " is never closed");
            assertNull(shown.put(file, text.toString()), file + " is shown twice");
            i = end;
        }
        return shown;
    }

    // ---- the examples run as the guide says ----------------------------------------------------------------------

    @Test
    void theAllocatorExampleRuns(@TempDir Path dir) throws Exception {
        try (Child allocator = Child.start(dir, AllocatorExample.class)) {
            allocator.assertSucceeded(List.of("1000 blocks served with 1 registration(s)"));
        }
    }

    @Test
    void theRegistrationCacheExampleRuns(@TempDir Path dir) throws Exception {
        try (Child cache = Child.start(dir, RegistrationCacheExample.class)) {
            cache.assertSucceeded(List.of("1001 acquisitions, 1 registration(s)"));
        }
    }

    @Test
    void theNettyExampleEchoesThroughRegisteredBuffers(@TempDir Path dir) throws Exception {
        try (Child echo = Child.start(dir, NettyEchoExample.class)) {
            echo.assertSucceeded(List.of("registered: true", "echoed: hello from registered memory"));
        }
    }

    @Test
    void theLeaseExampleRunsAsTwoProcesses(@TempDir Path dir) throws Exception {
        try (Child owner = Child.start(dir, LeaseExample.class, "owner", "0")) {
            String first = owner.firstLine();
            assertTrue(first.matches("listening on \\d+"), "the owner's first line: " + first + owner.stderr());
            String port = first.substring("listening on ".length());
            try (Child requester = Child.start(dir, LeaseExample.class, "requester",
                    InetAddress.getLoopbackAddress().getHostAddress() + ":" + port)) {
                requester.assertSucceeded(List.of("requester: wrote and read back 4096 bytes of lease 1",
                        "requester: done, 0 live blocks, 0 live resources"));
            }
            owner.assertSucceeded(List.of("owner: 1 lease(s) released", "owner: done, 0 live blocks, 0 live resources"));
        }
    }

    /** An example's main in a JVM of its own: stdout read as it comes, stderr into a file. */
    private static final class Child implements AutoCloseable {
        private final String name;
        private final Process process;
        private final BufferedReader stdout;
        private final Path stderr;

        private Child(String name, Process process, Path stderr) {
            this.name = name;
            this.process = process;
            this.stdout = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            this.stderr = stderr;
        }

        static Child start(Path dir, Class<?> main, String... args) throws IOException {
            String name = main.getSimpleName() + (args.length > 0 ? " " + args[0] : "");
            Path stderr = dir.resolve(name.replace(' ', '-') + ".err");
            return new Child(name, new ProcessBuilder(ChildJvm.command(JVM, main, args))
                    .redirectError(stderr.toFile()).start(), stderr);
        }

        String firstLine() throws Exception {
            String line = within(CompletableFuture.supplyAsync(() -> {
                try {
                    return stdout.readLine();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }));
            return line == null ? name + " printed nothing" : line;
        }

        /** Exit status 0, the rest of stdout exactly {@code lines}, and no warning on stderr. */
        void assertSucceeded(List<String> lines) throws Exception {
            List<String> rest = within(CompletableFuture.supplyAsync(() -> stdout.lines().toList()));
            assertTrue(process.waitFor(WAIT_SECONDS, TimeUnit.SECONDS), name + " did not exit" + stderr());
            assertEquals(0, process.exitValue(), name + "'s exit status" + stderr());
            assertEquals(lines, rest, name + "'s output" + stderr());
            assertFalse(Files.readString(stderr).contains("WARNING"), name + " warned" + stderr());
        }

        private <T> T within(CompletableFuture<T> reading) throws Exception {
            try {
                return reading.get(WAIT_SECONDS, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError(name + " printed no line in " + WAIT_SECONDS + " s" + stderr(), e);
            }
        }

        /** For messages. */
        String stderr() throws IOException {
            return "; stderr:\n" + Files.readString(stderr);
        }

        @Override
        public void close() {
            process.destroyForcibly();
        }
    }
}
