package io.mooring.testing;

import java.lang.System.Logger.Level;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Captures what a package logs during one test (a JUnit extension: {@code @RegisterExtension}), so tests can
 * assert on leak and failure reports and the warnings they provoke on purpose stay out of the build output.
 * Mooring logs through {@link System.Logger}, which the JDK routes to {@code java.util.logging}; the entries are
 * handed out in {@code System.Logger}'s terms, so a test module need not read {@code java.logging}.
 */
public final class CapturedLog implements BeforeEachCallback, AfterEachCallback {
    /** One logged message. */
    public record Entry(Level level, String message, Throwable thrown) {}

    private final Logger logger;
    private final List<Entry> entries = new CopyOnWriteArrayList<>();
    private final Handler handler = new Handler() {
        @Override public void publish(LogRecord r) { entries.add(new Entry(level(r), r.getMessage(), r.getThrown())); }
        @Override public void flush() {}
        @Override public void close() {}
    };

    /** What the logger {@code name} (a package, usually) and its children log. */
    public CapturedLog(String name) {
        logger = Logger.getLogger(name);
    }

    public List<Entry> entries() {
        return entries;
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        logger.addHandler(handler);
        logger.setUseParentHandlers(false);
    }

    @Override
    public void afterEach(ExtensionContext context) {
        logger.removeHandler(handler);
        logger.setUseParentHandlers(true);
    }

    /** The inverse of the JDK's System.Logger-to-java.util.logging mapping. */
    private static Level level(LogRecord r) {
        int v = r.getLevel().intValue();
        if (v >= java.util.logging.Level.SEVERE.intValue()) return Level.ERROR;
        if (v >= java.util.logging.Level.WARNING.intValue()) return Level.WARNING;
        if (v >= java.util.logging.Level.INFO.intValue()) return Level.INFO;
        if (v >= java.util.logging.Level.FINE.intValue()) return Level.DEBUG;
        return Level.TRACE;
    }
}
