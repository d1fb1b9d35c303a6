package io.mooring.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.mooring.verbs.values.Access;
import io.mooring.verbs.values.Gid;
import io.mooring.verbs.values.Mtu;
import java.time.Duration;
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
        assertEquals(Duration.ofNanos(640_000), d.minRnrTimer());
        assertEquals(Duration.ofNanos(4096L << 14), d.ackTimeout());
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
        assertEquals(ConnectOptions.DEFAULT.ackTimeout(), chosen.ackTimeout());
        ConnectOptions.Builder again = chosen.toBuilder();
        again.ackTimeout(Duration.ofMillis(1));
        assertEquals(ConnectOptions.DEFAULT.ackTimeout(), chosen.ackTimeout(), "options are immutable");
        assertEquals(OptionalInt.of(0xabcdef), again.build().sendPsn());
        assertEquals(OptionalInt.empty(), ConnectOptions.DEFAULT.sendPsn());
    }

    /** A time becomes the verbs' code of the shortest timer at least as long: a connection never gives up sooner. */
    @Test
    void timesRoundUpToWhatTheVerbsCanSay() {
        var options = ConnectOptions.builder().ackTimeout(Duration.ofMillis(4)).minRnrTimer(Duration.ofMillis(80))
                .build();
        assertEquals(Duration.ofNanos(4096L << 10), options.ackTimeout(), "4 ms: 4.194304 ms, code 10");
        assertEquals(10, options.ackTimeoutCode());
        assertEquals(Duration.ofNanos(81_920_000), options.minRnrTimer(), "80 ms: 81.92 ms, code 26");
        assertEquals(26, options.minRnrTimerCode());
        var exact = ConnectOptions.builder().ackTimeout(Duration.ofNanos(4096L << 10)).build();
        assertEquals(10, exact.ackTimeoutCode(), "an exact one stays");
        var shortest = ConnectOptions.builder().ackTimeout(Duration.ofNanos(1)).minRnrTimer(Duration.ofNanos(1))
                .build();
        assertEquals(1, shortest.ackTimeoutCode());
        assertEquals(1, shortest.minRnrTimerCode(), "10 µs");
        var longest = ConnectOptions.builder().minRnrTimer(Duration.ofMillis(600)).build();
        assertEquals(0, longest.minRnrTimerCode(), "code 0 is the longest RNR delay, 655.36 ms");
        assertEquals(Duration.ofNanos(655_360_000), longest.minRnrTimer());

        var tooLong = assertThrows(IllegalArgumentException.class,
                () -> ConnectOptions.builder().minRnrTimer(Duration.ofMillis(656)));
        assertTrue(tooLong.getMessage().startsWith("minRnrTimer PT0.656S exceeds the longest"), tooLong::getMessage);
        var zero = assertThrows(IllegalArgumentException.class,
                () -> ConnectOptions.builder().ackTimeout(Duration.ZERO));
        assertEquals("ackTimeout must be positive, was PT0S", zero.getMessage());
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
        assertThrows(IllegalArgumentException.class, () -> ConnectOptions.builder().ackTimeout(Duration.ofHours(3)));
        assertThrows(IllegalArgumentException.class, () -> ConnectOptions.builder().maxDestRdAtomic(256));
        assertThrows(IllegalArgumentException.class,
                () -> ConnectOptions.builder().access(EnumSet.of(Access.MW_BIND)));
    }
}
