package io.mooring.cli;

import picocli.CommandLine.Option;

/** {@code -h}/{@code --help}, mixed into every command (picocli's {@code help} command has its own). */
final class HelpOption {
    @Option(names = {"-h", "--help"}, usageHelp = true, description = "prints this help and exits")
    private boolean requested;
}
