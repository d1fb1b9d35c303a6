package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.Gid;
import io.mooring.verbs.values.Mtu;
import java.util.EnumSet;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class ConnectOptionsTest {
    @Test
    void defaultsAreWhatPerftestUses() {
        ConnectOptions d = ConnectOptions.DEFAULT;
        assertEquals(1, d.port());
        assertEquals(-1, d.gidIndex());
        assertEquals(Access.REMOTE, d.access());
        assertEquals(OptionalInt.empty(), d.sendPsn(), "a random PSN");
        assertEquals(0, d.pkeyIndex());
        assertEquals(12, d.minRnrTimer());
        assertEquals(14, d.timeout());
        assertEquals(7, d.retryCount());
        assertEquals(7, d.rnrRetry());
        assertEquals(1, d.maxRdAtomic());
        assertEquals(1, d.maxDestRdAtomic());
        assertEquals(0, d.trafficClass());
        assertEquals(0, d.serviceLevel());
        assertEquals(64, d.hopLimit());
    }

    @Test
    void aBuilderChangesOnlyWhatItNamesAndLeavesTheOriginal() {
        ConnectOptions chosen = ConnectOptions.DEFAULT.toBuilder().sendPsn(0xabcdef).maxRdAtomic(16)
                .access(EnumSet.of(Access.REMOTE_READ)).build();
        assertEquals(OptionalInt.of(0xabcdef), chosen.sendPsn());
        assertEquals(16, chosen.maxRdAtomic());
        assertEquals(EnumSet.of(Access.REMOTE_READ), chosen.access());
        assertEquals(14, chosen.timeout());
        ConnectOptions.Builder again = chosen.toBuilder();
        again.timeout(3);
        assertEquals(14, chosen.timeout(), "options are immutable");
        assertEquals(OptionalInt.of(0xabcdef), again.build().sendPsn());
        assertEquals(OptionalInt.empty(), ConnectOptions.DEFAULT.sendPsn());
    }

    @Test
    void aPsnOver24BitsIsRefusedNamingTheValueAndTheLimit() {
        var e = assertThrows(IllegalArgumentException.class, () -> ConnectOptions.builder().sendPsn(0x100_0000));
        assertEquals("sendPsn must be in [0, 16777215], was 16777216", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ConnectOptions.builder().sendPsn(-1));
        var info = assertThrows(IllegalArgumentException.class,
                () -> new QpInfo(1, 0x100_0000, Gid.ZERO, 0, Mtu.MTU_1024, 0));
        assertEquals("psn must be in [0, 16777215], was 16777216", info.getMessage());
    }

    @Test
    void rangesAreCheckedWhenSet() {
        assertThrows(IllegalArgumentException.class, () -> ConnectOptions.builder().gidIndex(-2));
        assertThrows(IllegalArgumentException.class, () -> ConnectOptions.builder().serviceLevel(16));
        assertThrows(IllegalArgumentException.class, () -> ConnectOptions.builder().trafficClass(256));
        assertThrows(IllegalArgumentException.class, () -> ConnectOptions.builder().hopLimit(-1));
        assertThrows(IllegalArgumentException.class, () -> ConnectOptions.builder().pkeyIndex(0x10000));
        assertThrows(IllegalArgumentException.class, () -> ConnectOptions.builder().timeout(32));
        assertThrows(IllegalArgumentException.class, () -> ConnectOptions.builder().maxDestRdAtomic(256));
        assertThrows(IllegalArgumentException.class,
                () -> ConnectOptions.builder().access(EnumSet.of(Access.MW_BIND)));
    }
}
