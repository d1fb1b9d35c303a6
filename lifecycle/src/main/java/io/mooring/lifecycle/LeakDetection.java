package io.mooring.lifecycle;

import java.util.Arrays;
import java.util.Locale;

/**
 * How much the graph reports about resources that become unreachable without {@code close()}, set with the
 * system property {@value #PROPERTY} (as Netty's {@code io.netty.leakDetection.level}).
 *
 * <p>Whatever the level, a leaked resource is still destroyed, in a safe order, through a
 * {@link java.lang.ref.Cleaner}: leak detection decides what is <em>said</em>, never whether native memory is
 * released.
 */
public enum LeakDetection {
    /** Leaks are cleaned up silently. */
    OFF,
    /** Leaks are logged and sent to listeners with kind, id and description (the default). */
    SIMPLE,
    /**
     * As SIMPLE, and every resource records the stack of its creation, shown in leak reports, in
     * {@link ResourceBusyException} and in {@link ResourceGraph#dump()}. Costs a stack walk per creation.
     */
    PARANOID;

    /** The system property that selects the default level. */
    public static final String PROPERTY = "mooring.leakDetection";

    /**
     * The level named by {@value #PROPERTY}, or SIMPLE when it is unset.
     *
     * @throws IllegalArgumentException if the property names no level
     */
    public static LeakDetection fromSystemProperty() {
        String value = System.getProperty(PROPERTY);
        return value == null ? SIMPLE : parse(value);
    }

    /** Parses {@code off}, {@code simple} or {@code paranoid}, ignoring case. */
    public static LeakDetection parse(String value) {
        try {
            return valueOf(value.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("-D" + PROPERTY + "=" + value + " names no leak detection level; use one of "
                    + Arrays.toString(values()).toLowerCase(Locale.ROOT), e);
        }
    }
}
