package io.mooring.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The {@code mooring} command itself: its list of commands, its usage errors, its completion script. */
class MainTest {
    private static final List<String> COMMANDS = List.of("demo", "kv", "netty-echo", "pagestore", "pingpong", "devices",
            "lifecycle-demo", "completion", "help");

    @Test
    void helpListsEveryCommandAndTheScriptsOwn() throws Exception {
        for (String[] args : new String[][] {{"help"}, {"--help"}, {}}) {
            Run run = Run.of(args);
            assertEquals(0, run.status(), run::toString);
            assertTrue(run.out().startsWith("Usage: mooring [-h] [COMMAND]\n"), run::toString);
            for (String command : COMMANDS) {
                assertTrue(Pattern.compile("(?m)^  " + command + " +\\S").matcher(run.out()).find(), command + " in " + run);
            }
            assertTrue(run.out().contains("The ./mooring script runs these too: test"), run::toString);
        }
    }

    @Test
    void anUnknownCommandIsAUsageErrorWithSuggestions() throws Exception {
        Run run = Run.of("pingpog");
        assertEquals(2, run.status(), run::toString);
        assertTrue(run.err().startsWith("mooring: Unmatched argument at index 0: 'pingpog'\nDid you mean: mooring pingpong?\n"),
                run::toString);
        assertTrue(run.err().contains("\nUsage: mooring [-h] [COMMAND]\n"), run::toString);
        assertTrue(run.err().contains("lifecycle-demo"), run::toString);
        assertEquals("", run.out());
    }

    @Test
    void everyCommandHasHelp() throws Exception {
        // picocli reports a description it cannot format (a bare %) on System.err, whatever the command's streams
        PrintStream console = System.err;
        var warnings = new ByteArrayOutputStream();
        System.setErr(new PrintStream(warnings, true, StandardCharsets.UTF_8));
        try {
            for (String command : COMMANDS) {
                Run run = Run.of(command, "--help");
                assertEquals(0, run.status(), run::toString);
                assertTrue(run.out().contains("Usage: mooring " + command + " [-h]"), run::toString);
                assertEquals("", run.err(), run::toString);
            }
        } finally {
            System.setErr(console);
        }
        assertEquals("", warnings.toString(StandardCharsets.UTF_8));
    }

    @Test
    void completionIsABashScriptForEveryCommandAndOption() throws Exception {
        Run run = Run.of("completion");
        assertEquals(0, run.status(), run::toString);
        String script = run.out();
        assertTrue(script.startsWith("#!/usr/bin/env bash"), script);
        assertTrue(script.contains("complete -F _complete_mooring -o default mooring"), script);
        for (String command : COMMANDS) assertTrue(script.contains(command), command);
        for (String option : List.of("--concurrency", "--mode", "--poll", "--listen", "--connect", "--keys", "--role")) {
            assertTrue(script.contains(option), option);
        }
        assertTrue(script.contains("(\"send\" \"write\" \"write-imm\" \"read\") # --mode values"), "the modes");
    }
}
