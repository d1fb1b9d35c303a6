package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.Gid;
import io.mooring.verbs.values.Mtu;
import io.mooring.verbs.values.QpAttribute;
import io.mooring.verbs.values.QpAttributes;
import io.mooring.verbs.values.QpState;
import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class QpAttributesTest {
    @Test
    void theMaskIsWhatWasSet() {
        var a = new QpAttributes().state(QpState.RTS).sendPsn(5).timeout(14);
        assertEquals(QpAttribute.STATE.bit() | QpAttribute.SQ_PSN.bit() | QpAttribute.TIMEOUT.bit(), a.mask());
        assertTrue(a.isSet(QpAttribute.SQ_PSN));
        assertFalse(a.isSet(QpAttribute.RQ_PSN));
        assertEquals(0, a.receivePsn(), "unset fields read as 0");
        assertNull(a.pathMtu());
    }

    @Test
    void everyFieldOfTheAddressVectorSetsTheOneGroup() {
        assertEquals(QpAttribute.ADDRESS_VECTOR.bit(), new QpAttributes().hopLimit(3).mask());
        assertEquals(QpAttribute.ADDRESS_VECTOR.bit(), new QpAttributes().serviceLevel(1).trafficClass(2)
                .sourceGidIndex(1).destLid(9).destGid(Gid.ZERO).destToken(7).mask());
    }

    @Test
    void applyTakesOnlyTheGroupsSet() {
        var kept = new QpAttributes().state(QpState.INIT).port(1).timeout(3).hopLimit(64).trafficClass(8);
        kept.apply(new QpAttributes().state(QpState.RTR).timeout(9).destGid(Gid.ZERO));
        assertEquals(QpState.RTR, kept.state());
        assertEquals(1, kept.port());
        assertEquals(9, kept.timeout());
        assertEquals(Gid.ZERO, kept.destGid());
        assertEquals(0, kept.hopLimit(), "an address vector is set as a whole");
        assertEquals(QpAttribute.STATE.bit() | QpAttribute.PORT.bit() | QpAttribute.TIMEOUT.bit()
                | QpAttribute.ADDRESS_VECTOR.bit(), kept.mask());
        var copy = kept.copy();
        assertEquals(kept.mask(), copy.mask());
        assertEquals(kept.toString(), copy.toString());
    }

    @Test
    void valuesOutOfRangeAreRefusedNamingValueAndLimits() {
        var psn = assertThrows(IllegalArgumentException.class, () -> new QpAttributes().sendPsn(1 << 24));
        assertEquals("sendPsn must be in [0, 16777215], was 16777216", psn.getMessage());
        var negative = assertThrows(IllegalArgumentException.class, () -> new QpAttributes().receivePsn(-1));
        assertEquals("receivePsn must be in [0, 16777215], was -1", negative.getMessage());
        var sl = assertThrows(IllegalArgumentException.class, () -> new QpAttributes().serviceLevel(16));
        assertEquals("serviceLevel must be in [0, 15], was 16", sl.getMessage());
        var retry = assertThrows(IllegalArgumentException.class, () -> new QpAttributes().rnrRetry(8));
        assertEquals("rnrRetry must be in [0, 7], was 8", retry.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new QpAttributes().maxRdAtomic(256));
        assertThrows(IllegalArgumentException.class, () -> new QpAttributes().port(0));
        var local = assertThrows(IllegalArgumentException.class,
                () -> new QpAttributes().access(EnumSet.of(Access.LOCAL_WRITE)));
        assertTrue(local.getMessage().contains("LOCAL_WRITE"), local.getMessage());
        assertEquals(0, new QpAttributes().mask(), "nothing is recorded by a refused value");
    }

    @Test
    void accessIsCopied() {
        var rights = EnumSet.of(Access.REMOTE_READ);
        var a = new QpAttributes().access(rights);
        rights.add(Access.REMOTE_WRITE);
        assertEquals(Set.of(Access.REMOTE_READ), a.access());
        assertThrows(UnsupportedOperationException.class, () -> a.access().add(Access.REMOTE_ATOMIC));
    }

    @Test
    void mtusByBytes() {
        for (Mtu m : Mtu.values()) assertEquals(m, Mtu.ofBytes(m.bytes()));
        var odd = assertThrows(IllegalArgumentException.class, () -> Mtu.ofBytes(1500));
        assertTrue(odd.getMessage().contains("1500") && odd.getMessage().contains("4096"), odd.getMessage());
    }
}
