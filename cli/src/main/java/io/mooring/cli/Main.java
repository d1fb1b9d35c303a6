package io.mooring.cli;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.AutoComplete;
import picocli.CommandLine.Command;
import picocli.CommandLine.HelpCommand;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

/**
 * The {@code mooring} command on picocli: one {@link DeviceCommand} class per subcommand with options (they print to
 * this one's streams), the option-less ones as methods here. Usage errors all take one form ({@link Usage});
 * {@code --help} works on every command and {@code completion} prints a bash completion script.
 */
@Command(name = "mooring", synopsisSubcommandLabel = "[COMMAND]",
        description = "Mooring, a pure-Java RDMA memory framework: its demos, examples and tools.",
        subcommands = {Demo.class, KvCommand.class, NettyEchoCommand.class, PageStoreCommand.class, PingPong.class},
        footer = {"",
                "The ./mooring script runs these too: test [MAVEN ARGS] (the test suite), mvn ARGS (Maven with the",
                "JDK it found), bench [JMH ARGS] and bench overhead [BLOCKS] (docs/benchmarks.md).",
                "'mooring COMMAND --help' (or 'mooring help COMMAND') lists a command's options with their defaults."})
public final class Main implements Callable<Integer> {
    private static final String LOG_FORMAT = "java.util.logging.SimpleFormatter.format";
    private static final int HELP_WIDTH = 110;

    /** Mooring's modules that call native code, the only ones granted native access on the module path. */
    static final String NATIVE_ACCESS = "--enable-native-access=io.mooring.verbs,io.mooring.allocator,io.mooring.netty";

    /** Where every command prints its results and failures (a test's own streams, or the terminal's). */
    final PrintStream out;
    final PrintStream err;

    @Spec
    private CommandSpec spec;

    @Mixin
    private HelpOption help;

    private Main(PrintStream out, PrintStream err) {
        this.out = out;
        this.err = err;
    }

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

    public static void main(String[] args) {
        // One line per log record on the terminal (messages name their cause), unless configured otherwise.
        if (System.getProperty(LOG_FORMAT) == null) System.setProperty(LOG_FORMAT, "[%4$s] %5$s%n");
        System.exit(run(args, System.out, System.err));
    }

    /**
     * Runs {@code mooring args}: 0 on success, 1 on a failure (one line on {@code err}), 2 on a usage error. An
     * unexpected exception is printed with its stack trace and gives 1.
     */
    static int run(String[] args, PrintStream out, PrintStream err) {
        var line = new CommandLine(new Main(out, err));
        line.addSubcommand(new HelpCommand()); // after the methods' subcommands: it comes last in the list
        var commands = new ArrayList<>(line.getSubcommands().values());
        commands.add(line);
        for (CommandLine command : commands) { // options in the order written, each with its default value
            command.getCommandSpec().usageMessage().width(HELP_WIDTH).sortOptions(false).showDefaultValues(true);
        }
        line.setOut(new PrintWriter(out, true));
        line.setErr(new PrintWriter(err, true));
        line.setParameterExceptionHandler(Usage::print);
        return line.execute(args);
    }

    /** {@code mooring} alone: the list of commands. */
    @Override
    public Integer call() {
        spec.commandLine().usage(out);
        return 0;
    }

    @Command(name = "devices", description = {"the RDMA devices of every provider, like ibv_devinfo -v; last, what"
            + " the mooring.provider property (or MOORING_PROVIDER) chooses by default"})
    int devices(@Mixin HelpOption help) {
        Devices.print(out);
        return 0;
    }

    @Command(name = "lifecycle-demo", description = "ordered teardown, pins, leaks and failures in the lifecycle graph")
    int lifecycleDemo(@Mixin HelpOption help) throws InterruptedException {
        return LifecycleDemo.walk(out) ? 0 : 1;
    }

    @Command(name = "completion", description = {"prints a bash completion script for mooring's commands and options",
            "Load it with: source <(./mooring completion)   (in ~/.bashrc to keep it; it completes ./mooring too)"})
    int completion(@Mixin HelpOption help) {
        out.print(AutoComplete.bash("mooring", spec.commandLine()));
        out.flush();
        return 0;
    }
}
