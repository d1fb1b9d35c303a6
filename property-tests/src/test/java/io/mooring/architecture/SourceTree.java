package io.mooring.architecture;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.classfile.ClassFile;
import java.lang.classfile.ClassModel;
import java.net.URI;
import java.net.URL;
import java.nio.file.FileSystemNotFoundException;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The project as the architecture rules see it: each Maven module's {@code module-info.java}, its main sources, and the
 * compiled classes of its exported packages (read with the JDK's class-file API, never loaded).
 */
final class SourceTree {
    /** A module declared by a {@code module-info.java}: its directory, name, io.mooring requires and exports. */
    record Module(Path dir, String name, List<String> requires, List<String> exports) {
        Path sources() {
            return dir.resolve("src/main/java");
        }
    }

    /** One main source file: its module directory's name, path and text. */
    record Source(String moduleDir, Path path, String text) {
        String fileName() {
            return path.getFileName().toString();
        }

        /** The text with comments and string literals blanked, line breaks kept (so line numbers still count). */
        String code() {
            return CODE_NOISE.matcher(text).replaceAll(m -> m.group().replaceAll("[^\n]", " "));
        }

        /** The text with comments blanked, string literals kept (a symbol looked up by name is still used). */
        String withoutComments() {
            return CODE_NOISE.matcher(text).replaceAll(m -> m.group().startsWith("\"") ? Matcher.quoteReplacement(m.group())
                    : m.group().replaceAll("[^\n]", " "));
        }

        List<String> lines() {
            return text.lines().toList();
        }
    }

    private static final Pattern CODE_NOISE =
            Pattern.compile("//[^\n]*|/\\*.*?\\*/|\"\"\".*?\"\"\"|\"(\\\\.|[^\"\\\\\n])*\"", Pattern.DOTALL);
    private static final Pattern MODULE = Pattern.compile("^\\s*(?:@\\S+\\s*)*(?:open\\s+)?module\\s+([\\w.]+)",
            Pattern.MULTILINE);
    private static final Pattern REQUIRES = Pattern.compile("requires\\s+(?:transitive\\s+|static\\s+)*([\\w.]+)\\s*;");
    private static final Pattern EXPORTS = Pattern.compile("exports\\s+([\\w.]+)\\s*;"); // unqualified exports only

    final Path root;
    final List<Module> modules = new ArrayList<>();
    final List<Source> sources = new ArrayList<>();

    SourceTree(Path root) throws IOException {
        this.root = root;
        try (Stream<Path> dirs = Files.list(root)) {
            for (Path dir : dirs.filter(d -> Files.isDirectory(d.resolve("src/main/java"))).sorted().toList()) {
                Path info = dir.resolve("src/main/java/module-info.java");
                if (Files.exists(info)) modules.add(module(dir, Files.readString(info)));
                try (Stream<Path> files = Files.walk(dir.resolve("src/main/java"))) {
                    for (Path f : files.filter(f -> f.toString().endsWith(".java")).sorted().toList()) {
                        sources.add(new Source(dir.getFileName().toString(), f, Files.readString(f)));
                    }
                }
            }
        }
    }

    /** The project's root: the parent of this module's directory (where Maven runs the tests). */
    static SourceTree ofProject() throws IOException {
        Path root = Path.of("").toAbsolutePath().getParent();
        if (!Files.exists(root.resolve("lifecycle/src/main/java/module-info.java"))) {
            throw new IllegalStateException("not run from a module of the Mooring project: " + root);
        }
        return new SourceTree(root);
    }

    private static Module module(Path dir, String info) {
        String code = CODE_NOISE.matcher(info).replaceAll(" ");
        Matcher name = MODULE.matcher(code);
        if (!name.find()) throw new IllegalStateException("no module declaration in " + dir + "/module-info.java");
        return new Module(dir, name.group(1), all(REQUIRES, code), all(EXPORTS, code));
    }

    private static List<String> all(Pattern p, String text) {
        List<String> found = new ArrayList<>();
        for (Matcher m = p.matcher(text); m.find(); ) found.add(m.group(1));
        return found;
    }

    /** Which module holds each package with main sources, by the directories of its sources. */
    Map<String, String> packageOwners() {
        Map<String, String> owners = new TreeMap<>();
        for (Module m : modules) {
            for (Source s : sources) {
                if (s.path().startsWith(m.sources()) && !s.fileName().equals("module-info.java")) {
                    owners.put(m.sources().relativize(s.path().getParent()).toString().replace('/', '.'), m.name());
                }
            }
        }
        return owners;
    }

    /**
     * The classes of package {@code pkg} on the test class path (a build directory or a jar), by internal name; empty
     * if the package is not on the class path.
     */
    static Map<String, ClassModel> classesOf(String pkg) throws IOException {
        Map<String, ClassModel> classes = new TreeMap<>();
        String dir = pkg.replace('.', '/');
        for (URL url : Collections.list(ClassLoader.getSystemClassLoader().getResources(dir))) {
            Path path = pathOf(url);
            try (Stream<Path> files = Files.list(path)) {
                for (Path f : files.filter(f -> f.toString().endsWith(".class")).toList()) {
                    ClassModel cm = ClassFile.of().parse(Files.readAllBytes(f));
                    classes.put(cm.thisClass().asInternalName(), cm);
                }
            }
        }
        return classes;
    }

    private static Path pathOf(URL url) {
        try {
            URI uri = url.toURI();
            if (!uri.getScheme().equals("jar")) return Path.of(uri);
            try {
                return FileSystems.getFileSystem(uri).provider().getPath(uri);
            } catch (FileSystemNotFoundException first) {
                return FileSystems.newFileSystem(uri, Map.of()).provider().getPath(uri);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (java.net.URISyntaxException e) {
            throw new IllegalStateException(url.toString(), e);
        }
    }

    /** {@code found} less the {@code pending} entries, and the pending entries found no more (stale: remove them). */
    static List<String> unexpected(Set<String> found, Set<String> pending) {
        List<String> problems = new ArrayList<>(found.stream().filter(f -> !pending.contains(f)).sorted().toList());
        pending.stream().filter(p -> !found.contains(p)).sorted()
                .forEach(p -> problems.add("pending entry no longer found (remove it from the list): " + p));
        return problems;
    }
}
