package io.mooring.testing;

import com.sun.management.HotSpotDiagnosticMXBean;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Every thread's stack, virtual threads included, for a test that waited too long: a hang that shows once in many
 * runs is only understood from where each thread stood when it happened.
 */
public final class ThreadDump {
    private ThreadDump() {
    }

    /**
     * {@code future}'s value, waiting at most {@code timeout}.
     *
     * @throws TimeoutException if it takes longer, with every thread's stack at that moment as its message
     */
    public static <T> T awaitOrDump(Future<T> future, Duration timeout, String what)
            throws ExecutionException, InterruptedException, TimeoutException {
        try {
            return future.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            var timedOut = new TimeoutException(what + " took longer than " + timeout + "; the threads then:\n" + all());
            timedOut.initCause(e);
            throw timedOut;
        }
    }

    /** Every thread's stack as text, virtual threads included (what {@code jcmd Thread.dump_to_file} writes). */
    public static String all() {
        try {
            Path dir = Files.createTempDirectory("mooring-threads");
            Path file = dir.resolve("threads.txt");
            try {
                ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                        .dumpThreads(file.toString(), HotSpotDiagnosticMXBean.ThreadDumpFormat.TEXT_PLAIN);
                return Files.readString(file);
            } finally {
                Files.deleteIfExists(file);
                Files.delete(dir);
            }
        } catch (IOException e) {
            return "(no thread dump: " + e + ")";
        }
    }
}
