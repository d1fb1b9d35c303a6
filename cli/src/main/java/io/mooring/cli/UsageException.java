package io.mooring.cli;

/** The command line is wrong: {@link Main} prints the message and the command's usage and exits with 2. */
final class UsageException extends Exception {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
        super(message);
    }
}
