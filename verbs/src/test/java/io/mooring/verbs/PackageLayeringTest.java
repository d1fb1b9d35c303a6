package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The verbs module's packages form layers, read from the sources (imports and qualified names outside comments): the
 * values and the test facilities depend on nothing of the module, the SPI on those two only, the objects on the SPI
 * and below, the providers on everything else. A value type that takes one of the objects, or an SPI that takes a
 * public request, would bring back the cycle between the API and the SPI.
 */
class PackageLayeringTest {
    private static final Path SOURCES = Path.of(System.getProperty("basedir", System.getProperty("user.dir")))
            .resolve("src/main/java/io/mooring/verbs");
    private static final Pattern PACKAGE = Pattern.compile("^package (io\\.mooring\\.verbs[.\\w]*);", Pattern.MULTILINE);
    private static final Pattern REFERENCE = Pattern.compile("\\bio\\.mooring\\.verbs((?:\\.[a-z]\\w*)*)\\.[A-Z]");

    private static final String API = "io.mooring.verbs";
    private static final Map<String, Set<String>> ALLOWED = Map.of(
            API + ".values", Set.of(),
            API + ".testing", Set.of(),
            API + ".spi", Set.of(API + ".values", API + ".testing"),
            API, Set.of(API + ".spi", API + ".values", API + ".testing"),
            API + ".soft", Set.of(API, API + ".spi", API + ".values", API + ".testing"),
            API + ".ibv", Set.of(API, API + ".spi", API + ".values", API + ".testing"));

    @Test
    void eachPackageDependsOnlyOnTheLayersBelowIt() throws IOException {
        assertTrue(Files.isDirectory(SOURCES), () -> SOURCES + " is not there; run from the verbs module");
        Map<String, Set<String>> found = new TreeMap<>();
        try (Stream<Path> files = Files.walk(SOURCES)) {
            files.filter(f -> f.toString().endsWith(".java")).forEach(f -> collect(f, found));
        }
        assertEquals(ALLOWED.keySet(), found.keySet(), "the module's packages");
        found.forEach((from, to) -> {
            var beyond = new TreeSet<>(to);
            beyond.removeAll(ALLOWED.get(from));
            assertTrue(beyond.isEmpty(), () -> from + " depends on " + beyond + ", above its layer");
        });
    }

    private static void collect(Path file, Map<String, Set<String>> found) {
        String text;
        try {
            text = Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        Matcher p = PACKAGE.matcher(text);
        if (!p.find()) return; // module-info
        String from = p.group(1);
        Set<String> to = found.computeIfAbsent(from, k -> new TreeSet<>());
        for (String line : text.split("\n")) {
            String code = line.strip();
            if (code.startsWith("*") || code.startsWith("/*") || code.startsWith("//")) continue;
            Matcher r = REFERENCE.matcher(code);
            while (r.find()) {
                String target = API + r.group(1);
                if (!target.equals(from)) to.add(target);
            }
        }
    }
}
