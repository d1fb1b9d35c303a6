package io.mooring.cli;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The {@code mooring} command: dispatches to one subcommand per class. */
public final class Main {
    /**
     * A subcommand: runs with its arguments, prints results to {@code out} and failures to {@code err}, returns the
     * exit status; a {@link UsageException} makes {@link #run} print the command's usage and return 2.
     */
    interface Command {
        int run(String[] args, PrintStream out, PrintStream err) throws Exception;
    }

    private static final String LOG_FORMAT = "java.util.logging.SimpleFormatter.format";

    private record Entry(String summary, String usage, Command command) {}

    private static final Map<String, Entry> COMMANDS = new TreeMap<>(Map.of(
            "devices", new Entry("the RDMA devices of every provider, like ibv_devinfo", Devices.USAGE, Devices::run),
            "pingpong", new Entry("RC ping-pong latency and throughput, in one process or two", PingPong.USAGE,
                    PingPong::run),
            "demo", new Entry("two processes lease, use, release and revoke remote memory (the main job)",
                    Demo.USAGE, Demo::run),
            "kv", new Entry("a remote key-value cache: PUT by message, GET by READ of a leased value",
                    KvCommand.USAGE, KvCommand::run),
            "lifecycle-demo", new Entry("ordered teardown, pins, leaks and failures in the lifecycle graph",
                    "usage: mooring lifecycle-demo", (args, out, err) -> LifecycleDemo.run(args, out))));

    private Main() {}

    /** Mooring's modules that call native code, the only ones granted native access on the module path. */
    static final String NATIVE_ACCESS = "--enable-native-access=io.mooring.verbs,io.mooring.allocator";

    /**
     * The command that runs {@code mooring args} in a new JVM started the way this one was: from the module path
     * when this class is in a named module (as {@code ./mooring} runs it), else from the class path.
     */
    static List<String> command(String... args) {
        var command = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElseThrow()));
        Module module = Main.class.getModule();
        if (module.isNamed()) {
            command.addAll(List.of(NATIVE_ACCESS, "-p", System.getProperty("jdk.module.path"),
                    "-m", module.getName() + "/" + Main.class.getName()));
        } else {
            command.addAll(List.of("--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                    Main.class.getName()));
        }
        command.addAll(List.of(args));
        return command;
    }

    public static void main(String[] args) throws Exception {
        // One line per log record on the terminal (messages name their cause), unless configured otherwise.
        if (System.getProperty(LOG_FORMAT) == null) System.setProperty(LOG_FORMAT, "[%4$s] %5$s%n");
        System.exit(run(args, System.out, System.err));
    }

    static int run(String[] args, PrintStream out, PrintStream err) throws Exception {
        if (args.length == 0 || args[0].equals("help") || args[0].equals("--help")) {
            usage(out);
            return 0;
        }
        Entry entry = COMMANDS.get(args[0]);
        if (entry == null) {
            err.println("mooring: unknown command '" + args[0] + "'");
            usage(err);
            return 2;
        }
        if (args.length == 2 && args[1].equals("--help")) {
            out.println(entry.usage());
            return 0;
        }
        try {
            return entry.command().run(Arrays.copyOfRange(args, 1, args.length), out, err);
        } catch (UsageException e) {
            err.println("mooring " + args[0] + ": " + e.getMessage());
            err.println(entry.usage());
            return 2;
        }
    }

    private static void usage(PrintStream out) {
        out.println("usage: mooring COMMAND [ARGS]   (mooring test runs the test suite)");
        out.println("commands:");
        COMMANDS.forEach((name, e) -> out.printf("  %-16s %s%n", name, e.summary()));
    }
}
