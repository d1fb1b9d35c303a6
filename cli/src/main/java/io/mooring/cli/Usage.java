package io.mooring.cli;

import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * Usage errors, one form for all of them — picocli's own (an unknown option, a value of the wrong type, a missing or
 * repeated one) and the commands' (a value out of range, options that exclude each other): {@code mooring COMMAND:
 * what is wrong, naming the option and the value}, then the command's usage, exit status 2.
 */
final class Usage {
    private Usage() {}

    /** Prints {@code e} in the one form; picocli's parameter exception handler. */
    static int print(ParameterException e, String[] args) {
        CommandLine line = e.getCommandLine();
        PrintWriter err = line.getErr();
        err.println(line.getCommandSpec().qualifiedName() + ": " + e.getMessage());
        UnmatchedArgumentException.printSuggestions(e, err);
        line.usage(err);
        return line.getCommandSpec().exitCodeOnInvalidInput();
    }

    /** A usage error of the command {@code spec}; thrown from a command, {@link #print} reports it. */
    static ParameterException error(CommandSpec spec, String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    /**
     * {@code value} of {@code option} if it lies in [{@code min}, {@code max}].
     *
     * @throws ParameterException naming the option, the value and the range
     */
    static int within(CommandSpec spec, String option, int value, int min, int max) {
        if (value >= min && value <= max) return value;
        throw error(spec, "Invalid value for option '" + option + "': " + value + " is not from " + min + " to " + max);
    }
}
