package io.mooring.testing;

import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The command that starts a second JVM with the classes of the test that asks: its module's classes and test
 * classes and every dependency. Surefire runs a module's tests on the module path with the test classes patched in,
 * which a child cannot repeat without the module's own launch arguments, so the child runs on the class path (which
 * also exercises Mooring as a class-path application would use it).
 */
public final class ChildJvm {
    private ChildJvm() {
    }

    /**
     * {@code java [jvmOptions] -cp ... mainClass [args]}.
     *
     * @param jvmOptions options before the class path, e.g. {@code --enable-native-access=ALL-UNNAMED}
     */
    public static List<String> command(List<String> jvmOptions, Class<?> mainClass, String... args) {
        String testClasses = Path.of(System.getProperty("basedir", "."), "target", "test-classes").toString();
        String classPath = String.join(File.pathSeparator, Stream.of(System.getProperty("jdk.module.path", ""),
                System.getProperty("java.class.path", ""), testClasses).filter(s -> !s.isEmpty()).toList());
        var command = new ArrayList<String>();
        command.add(ProcessHandle.current().info().command().orElseThrow());
        command.addAll(jvmOptions);
        command.addAll(List.of("-cp", classPath, mainClass.getName()));
        command.addAll(List.of(args));
        return command;
    }

    /**
     * {@code java [jvmOptions] ... -m module/mainClass [args]}: the child as Surefire runs this test, on the module
     * path with the test classes patched into the module under test, so a module's own options (such as
     * {@code --enable-native-access=io.mooring.verbs}) apply to it by name.
     */
    public static List<String> moduleCommand(List<String> jvmOptions, Class<?> mainClass, String... args) {
        String module = mainClass.getModule().getName();
        if (module == null) throw new IllegalStateException(mainClass + " is not in a named module");
        String testClasses = Path.of(System.getProperty("basedir", "."), "target", "test-classes").toString();
        var command = new ArrayList<String>();
        command.add(ProcessHandle.current().info().command().orElseThrow());
        command.addAll(jvmOptions);
        command.addAll(List.of("-p", System.getProperty("jdk.module.path"),
                "--patch-module", module + "=" + testClasses, "--add-reads", module + "=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), "-m", module + "/" + mainClass.getName()));
        command.addAll(List.of(args));
        return command;
    }
}
