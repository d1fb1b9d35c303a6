package io.mooring.testing;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Assumptions;

/**
 * What a test needs from the machine beyond the JDK — a C compiler, a header, a shared library — and what happens
 * when it is missing. A newcomer's machine may lack them, so by default the test is skipped with the package to
 * install; CI sets {@value #REQUIRED_PROPERTY}{@code =true} after installing them, and then a missing tool fails the
 * test, so a broken install cannot pass as a skip.
 */
public final class NativeTools {
    /** The system property under which a missing native tool fails the test instead of skipping it. */
    public static final String REQUIRED_PROPERTY = "mooring.native.required";

    /** The directories the dynamic linker searches by default on Debian and its relatives. */
    private static final List<Path> LIBRARY_DIRS = List.of(Path.of("/usr/lib/x86_64-linux-gnu"),
            Path.of("/lib/x86_64-linux-gnu"), Path.of("/usr/lib/aarch64-linux-gnu"),
            Path.of("/lib/aarch64-linux-gnu"), Path.of("/usr/lib64"), Path.of("/lib64"), Path.of("/usr/lib"),
            Path.of("/lib"), Path.of("/usr/local/lib"));

    /** gcc's default include directories on Debian: the common one and the multiarch ones. */
    private static final List<Path> INCLUDE_DIRS = List.of(Path.of("/usr/include"),
            Path.of("/usr/include/x86_64-linux-gnu"), Path.of("/usr/include/aarch64-linux-gnu"));

    private NativeTools() {
    }

    /** Requires {@code command} on the PATH (for example {@code gcc}), installed by Debian's {@code pkg}. */
    public static void requireCommand(String command, String pkg) {
        require(onPath(command), "the command '" + command + "' is not installed", pkg);
    }

    /** Requires the C header {@code include} (as in {@code #include <include>}) where gcc looks by default. */
    public static void requireHeader(String include, String pkg) {
        require(INCLUDE_DIRS.stream().anyMatch(dir -> Files.isRegularFile(dir.resolve(include))),
                "the C header <" + include + "> is not installed", pkg);
    }

    /** Requires the shared library {@code soname} (for example {@code libibverbs.so.1}) where dlopen finds it. */
    public static void requireLibrary(String soname, String pkg) {
        require(hasLibrary(soname), "the shared library " + soname + " is not installed", pkg);
    }

    /** Whether dlopen would find {@code soname} in the default library directories. */
    public static boolean hasLibrary(String soname) {
        return LIBRARY_DIRS.stream().anyMatch(dir -> Files.isRegularFile(dir.resolve(soname))); // links followed
    }

    private static void require(boolean present, String what, String pkg) {
        if (present) return;
        String message = what + " (Debian package " + pkg + ": apt-get install -y " + pkg + ")";
        if (Boolean.getBoolean(REQUIRED_PROPERTY)) {
            throw new AssertionError(message + "; -D" + REQUIRED_PROPERTY + "=true makes this a failure");
        }
        Assumptions.abort(message);
    }

    private static boolean onPath(String command) {
        return Arrays.stream(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
                .filter(dir -> !dir.isEmpty())
                .anyMatch(dir -> Files.isExecutable(Path.of(dir, command)));
    }
}
