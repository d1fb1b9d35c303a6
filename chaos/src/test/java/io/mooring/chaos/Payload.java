package io.mooring.chaos;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/**
 * A chaos message: its sequence number on its (session, direction), the CRC-32C of the rest, then bytes drawn from the
 * sequence number. A receiver that checks the number against the next it expects and the checksum against the bytes
 * sees a message delivered twice, lost, reordered or corrupted.
 */
final class Payload {
    static final int HEADER = 16;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED;

    private Payload() {
    }

    /** Fills {@code length} bytes of {@code into} as message {@code seq}. */
    static void write(MemorySegment into, int length, long seq) {
        byte[] body = new byte[length - HEADER];
        new SplittableRandom(seq * 0x9E3779B97F4A7C15L).nextBytes(body);
        into.set(LONG, 0, seq);
        into.set(LONG, 8, crc(body));
        MemorySegment.copy(body, 0, into, ValueLayout.JAVA_BYTE, HEADER, body.length);
    }

    /** The sequence number of the message in {@code data}; throws naming the fault if its checksum does not match. */
    static long check(MemorySegment data) {
        if (data.byteSize() < HEADER) throw new AssertionError("a message of " + data.byteSize() + " bytes: truncated");
        long seq = data.get(LONG, 0);
        byte[] body = data.asSlice(HEADER).toArray(ValueLayout.JAVA_BYTE);
        if (data.get(LONG, 8) != crc(body)) throw new AssertionError("message " + seq + " is corrupted");
        return seq;
    }

    private static long crc(byte[] body) {
        var crc = new CRC32C();
        crc.update(body);
        return crc.getValue();
    }
}
