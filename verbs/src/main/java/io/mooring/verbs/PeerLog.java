package io.mooring.verbs;

import java.lang.System.Logger.Level;
import java.lang.System.Logger;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * The one way to write a log line a remote peer can trigger at will (a forged connection, a malformed message, a
 * refused or lost session): at most {@value #LINES_PER_SECOND} such lines per second per logger, so a hostile crowd
 * cannot fill the disk or drown the lines that matter. Lines past the rate are counted, and the next line let through
 * says how many were left out.
 */
public final class PeerLog {
    public static final int LINES_PER_SECOND = 10;
    private static final ConcurrentHashMap<String, Window> WINDOWS = new ConcurrentHashMap<>();

    private PeerLog() {}

    public static void log(Logger log, Level level, String message) {
        log(log, level, message, null);
    }

    public static void log(Logger log, Level level, String message, Throwable thrown) {
        if (!log.isLoggable(level)) return;
        long left = WINDOWS.computeIfAbsent(log.getName(), n -> new Window()).admit(System.nanoTime());
        if (left < 0) return;
        String line = left == 0 ? message : message + " (" + left + " lines like it left out)";
        if (thrown == null) log.log(level, line);
        else log.log(level, line, thrown);
    }

    /** One second's budget of lines of one logger. */
    private static final class Window {
        private static final long SECOND = TimeUnit.SECONDS.toNanos(1);
        private long start = System.nanoTime();
        private int lines;
        private long leftOut;

        /** Lines left out since the last one let through, or -1 if this one is left out too. */
        synchronized long admit(long now) {
            if (now - start >= SECOND) {
                start = now;
                lines = 0;
            }
            if (lines >= LINES_PER_SECOND) {
                leftOut++;
                return -1;
            }
            lines++;
            long n = leftOut;
            leftOut = 0;
            return n;
        }
    }
}
