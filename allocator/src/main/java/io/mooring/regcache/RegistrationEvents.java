package io.mooring.regcache;

import jdk.jfr.FlightRecorder;

/** Emits a registration cache's {@link RegistrationEvent}s, touching the event class only while JFR records. */
final class RegistrationEvents {
    private RegistrationEvents() {}

    /**
     * Whether JFR is initialized. Checked before the event class is touched: initializing one registers it, which
     * initializes JFR — about half a second for a JVM that records nothing.
     */
    static boolean recording() {
        return FlightRecorder.isInitialized();
    }

    /** A JFR event without a duration: a region left {@code cache}, or a leak was found. */
    static void record(String cache, String action, CachedRegion r) {
        if (recording()) RegistrationEvent.begun().commit(cache, action, r, 0);
    }
}
