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
        var a = QpAttributes.builder().state(QpState.RTS).sendPsn(5).ackTimeoutCode(14).build();
        assertEquals(QpAttribute.STATE.bit() | QpAttribute.SQ_PSN.bit() | QpAttribute.TIMEOUT.bit(), a.mask());
        assertTrue(a.isSet(QpAttribute.SQ_PSN));
        assertFalse(a.isSet(QpAttribute.RQ_PSN));
        assertEquals(0, a.receivePsn(), "unset fields read as 0");
        assertNull(a.pathMtu());
    }

    @Test
    void everyFieldOfTheAddressVectorSetsTheOneGroup() {
        assertEquals(QpAttribute.ADDRESS_VECTOR.bit(), QpAttributes.builder().hopLimit(3).build().mask());
        assertEquals(QpAttribute.ADDRESS_VECTOR.bit(), QpAttributes.builder().serviceLevel(1).trafficClass(2)
                .sourceGidIndex(1).destLid(9).destGid(Gid.ZERO).destToken(7).build().mask());
    }

    @Test
    void applyTakesOnlyTheGroupsSet() {
        var before = QpAttributes.builder().state(QpState.INIT).port(1).ackTimeoutCode(3).hopLimit(64).trafficClass(8)
                .build();
        var modify = QpAttributes.builder().state(QpState.RTR).ackTimeoutCode(9).destGid(Gid.ZERO).build();
        var kept = before.toBuilder().apply(modify).build();
        assertEquals(QpState.RTR, kept.state());
        assertEquals(1, kept.port());
        assertEquals(9, kept.ackTimeoutCode());
        assertEquals(Gid.ZERO, kept.destGid());
        assertEquals(0, kept.hopLimit(), "an address vector is set as a whole");
        assertEquals(QpAttribute.STATE.bit() | QpAttribute.PORT.bit() | QpAttribute.TIMEOUT.bit()
                | QpAttribute.ADDRESS_VECTOR.bit(), kept.mask());
    }

    /** A value once built: its builder going on, or one derived by toBuilder(), changes nothing of it. */
    @Test
    void aBuiltValueNeverChangesAndToBuilderStartsFromIt() {
        var builder = QpAttributes.builder().state(QpState.RTS).sendPsn(5);
        QpAttributes built = builder.build();
        builder.sendPsn(6).ackTimeoutCode(14);
        QpAttributes derived = built.toBuilder().rnrRetry(7).build();
        assertEquals(5, built.sendPsn());
        assertEquals("[STATE=RTS, SQ_PSN=0x5]", built.toString());
        assertEquals(QpAttribute.STATE.bit() | QpAttribute.SQ_PSN.bit(), built.mask());
        assertEquals("[STATE=RTS, RNR_RETRY=7, SQ_PSN=0x5]", derived.toString());
        assertEquals(built.mask() | QpAttribute.RNR_RETRY.bit(), derived.mask());
        assertEquals(built.toString(), built.toBuilder().build().toString(), "a copy with the same fields set");
    }

    @Test
    void valuesOutOfRangeAreRefusedNamingValueAndLimits() {
        var psn = assertThrows(IllegalArgumentException.class, () -> QpAttributes.builder().sendPsn(1 << 24));
        assertEquals("sendPsn must be in [0, 16777215], was 16777216", psn.getMessage());
        var negative = assertThrows(IllegalArgumentException.class, () -> QpAttributes.builder().receivePsn(-1));
        assertEquals("receivePsn must be in [0, 16777215], was -1", negative.getMessage());
        var sl = assertThrows(IllegalArgumentException.class, () -> QpAttributes.builder().serviceLevel(16));
        assertEquals("serviceLevel must be in [0, 15], was 16", sl.getMessage());
        var retry = assertThrows(IllegalArgumentException.class, () -> QpAttributes.builder().rnrRetry(8));
        assertEquals("rnrRetry must be in [0, 7], was 8", retry.getMessage());
        assertThrows(IllegalArgumentException.class, () -> QpAttributes.builder().maxRdAtomic(256));
        var refusing = QpAttributes.builder();
        assertThrows(IllegalArgumentException.class, () -> refusing.port(0));
        var local = assertThrows(IllegalArgumentException.class,
                () -> QpAttributes.builder().access(EnumSet.of(Access.LOCAL_WRITE)));
        assertTrue(local.getMessage().contains("LOCAL_WRITE"), local.getMessage());
        assertEquals(0, refusing.build().mask(), "nothing is recorded by a refused value");
    }

    @Test
    void accessIsCopied() {
        var rights = EnumSet.of(Access.REMOTE_READ);
        var a = QpAttributes.builder().access(rights).build();
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
