package io.mooring.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The trace the eviction policies are compared on has the shape its comment promises. */
class RegistrationTraceTest {
    @Test
    void eachPeriodIsAScanOfEveryColdBufferThenZipfReadsOfTheHotSet() {
        int hot = 768;
        int[] trace = RegistrationTrace.trace(hot);
        assertEquals(RegistrationTrace.ACQUIRES, trace.length);
        int[] uses = new int[hot];
        int scans = 0;
        for (int n = 0; n < trace.length; n++) {
            int b = trace[n];
            if (b >= RegistrationTrace.MAX_HOT) {
                int c = b - RegistrationTrace.MAX_HOT;
                if (c == 0) scans++;
                assertEquals(scans * RegistrationTrace.SCAN_EVERY + c, n, "each period begins with a scan, in order");
            } else {
                assertTrue(b < hot);
                uses[b]++;
            }
        }
        assertEquals((RegistrationTrace.ACQUIRES - 1) / RegistrationTrace.SCAN_EVERY, scans);
        Arrays.sort(uses);
        int top = uses[hot - 1];
        assertTrue(top > 20 * uses[hot / 2], "skewed: the hottest buffer is read far more than the median one");
    }
}
