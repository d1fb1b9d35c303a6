package io.mooring.cli;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.Map;
import java.util.TreeMap;

/** The {@code mooring} command: dispatches to one subcommand per class. */
public final class Main {
    /** A subcommand: runs with its arguments, prints to {@code out}, returns the exit status. */
    interface Command {
        int run(String[] args, PrintStream out) throws Exception;
    }

    private static final String LOG_FORMAT = "java.util.logging.SimpleFormatter.format";

    private record Entry(String summary, Command command) {}

    private static final Map<String, Entry> COMMANDS = new TreeMap<>(Map.of(
            "lifecycle-demo", new Entry("ordered teardown, pins, leaks and failures in the lifecycle graph",
                    LifecycleDemo::run)));

    private Main() {}

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
        return entry.command().run(Arrays.copyOfRange(args, 1, args.length), out);
    }

    private static void usage(PrintStream out) {
        out.println("usage: mooring COMMAND [ARGS]   (mooring test runs the test suite)");
        out.println("commands:");
        COMMANDS.forEach((name, e) -> out.printf("  %-16s %s%n", name, e.summary()));
    }
}
