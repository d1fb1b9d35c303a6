package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.mooring.verbs.values.QpCapabilities;
import io.mooring.verbs.values.SrqAttributes;
import org.junit.jupiter.api.Test;

/** The verbs' value objects made by name: defaults, derived ones, and a bad setting named when built. */
class ValueBuildersTest {
    @Test
    void qpCapabilitiesAreBuiltByNameAndDerivedFromOthers() {
        QpCapabilities d = QpCapabilities.DEFAULT;
        assertEquals(128, d.maxSendWr());
        assertEquals(128, d.maxRecvWr());
        assertEquals(4, d.maxSendSge());
        assertEquals(4, d.maxRecvSge());
        assertEquals(64, d.maxInlineData());
        QpCapabilities deep = d.toBuilder().maxSendWr(256).build();
        assertEquals(256, deep.maxSendWr());
        assertEquals(d.toBuilder().maxSendWr(128).build(), d, "a setting changed back is the same value");
        assertNotEquals(d, deep);
        assertEquals(128, deep.maxRecvWr(), "what it did not name is kept");
        assertEquals(d, deep.toBuilder().maxSendWr(128).build());
        assertEquals(d.hashCode(), QpCapabilities.builder().build().hashCode());

        var e = assertThrows(IllegalArgumentException.class, () -> QpCapabilities.builder().maxRecvSge(0).build());
        assertEquals("maxRecvSge must be > 0, was 0", e.getMessage());
        var inline = assertThrows(IllegalArgumentException.class, () -> d.toBuilder().maxInlineData(-1).build());
        assertEquals("maxInlineData must be >= 0, was -1", inline.getMessage());
    }

    @Test
    void srqAttributesAreBuiltByNameAndCheckedTogether() {
        SrqAttributes d = SrqAttributes.DEFAULT;
        assertEquals(128, d.maxWr());
        assertEquals(1, d.maxSge());
        assertEquals(0, d.limit(), "not armed");
        SrqAttributes armed = d.toBuilder().maxWr(16).limit(4).build();
        assertEquals(16, armed.maxWr());
        assertEquals(4, armed.limit());
        assertEquals(1, armed.maxSge());
        assertEquals(armed, SrqAttributes.builder().limit(4).maxWr(16).build(), "in whatever order they are set");

        var limit = assertThrows(IllegalArgumentException.class, () -> armed.toBuilder().maxWr(2).build());
        assertEquals("SRQ limit 4 is outside [0, maxWr 2]", limit.getMessage());
        var sge = assertThrows(IllegalArgumentException.class, () -> SrqAttributes.builder().maxSge(0).build());
        assertEquals("a shared receive queue needs maxWr >= 1 and maxSge >= 1, was 128 and 0", sge.getMessage());
    }
}
