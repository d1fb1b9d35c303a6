package io.mooring.cli;

import io.mooring.verbs.RdmaDevices;
import java.io.PrintStream;
import java.util.concurrent.Callable;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * A command that opens a device: its {@code --provider} (see {@link RdmaDevices#choose}) and {@code --help}, the
 * output streams of {@link Main}, and its own model, for the usage errors it finds in its options ({@link Usage}).
 */
abstract class DeviceCommand implements Callable<Integer> {
    /** The names {@code --provider} takes. */
    static final class Providers extends OneOf<String> {
        Providers() {
            super(RdmaDevices.PROVIDER_CHOICES);
        }
    }

    @ParentCommand
    private Main main;
    @Spec
    CommandSpec spec;
    @Mixin
    private HelpOption help;

    @Option(names = "--provider", paramLabel = "PROVIDER", converter = Providers.class,
            completionCandidates = Providers.class, description = {"${COMPLETION-CANDIDATES} (default: the mooring.provider"
                    + " property or MOORING_PROVIDER, else auto: ibv if it shows a device, else soft)"})
    private String provider;

    /** The provider given, or null for the configured one. */
    String provider() {
        return provider;
    }

    PrintStream out() {
        return main.out;
    }

    PrintStream err() {
        return main.err;
    }
}
