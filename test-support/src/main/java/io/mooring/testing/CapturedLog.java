package io.mooring.testing;

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
 */
public final class CapturedLog implements BeforeEachCallback, AfterEachCallback {
    private final Logger logger;
    private final List<LogRecord> records = new CopyOnWriteArrayList<>();
    private final Handler handler = new Handler() {
        @Override public void publish(LogRecord r) { records.add(r); }
        @Override public void flush() {}
        @Override public void close() {}
    };

    /** What the logger {@code name} (a package, usually) and its children log. */
    public CapturedLog(String name) {
        logger = Logger.getLogger(name);
    }

    public List<LogRecord> records() {
        return records;
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
}
