package io.mooring.lease;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.StreamHandler;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Captures what this package logs during one test (sessions lost and segments leaked on purpose, malformed
 * frames), so that tests can assert on it and the build output stays clean.
 */
final class CapturedLeaseLog implements BeforeEachCallback, AfterEachCallback {
    private final Logger logger = Logger.getLogger(RdmaSession.class.getPackageName());
    private final List<LogRecord> records = new CopyOnWriteArrayList<>();
    private final Handler handler = new StreamHandler() {
        @Override public synchronized void publish(LogRecord r) { records.add(r); }
    };

    List<LogRecord> records() {
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
