package io.mooring.lease;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class MessageCodecTest {
    static final List<Message> SAMPLES = List.of(
            new Message.Request(1, 4096, 64, 0b0110, 5_000_000_000L),
            new Message.Grant(2, 17, 0x7f00_0000_1000L, 4096, 0x1234_56ab, 5_000_000_000L),
            new Message.Renew(3, 17, 1_000_000L),
            new Message.Renewed(4, 17, 1_000_000L),
            new Message.Release(5, 17),
            new Message.ReleaseAck(6, 17),
            new Message.Error(8, 3, "lease 17 is not yours ✗"),
            new Message.Credit(9, 8),
            new Message.Offer(10, 18, 0x7f00_0000_2000L, 64, 0x1234_56ac, 0b0100, 30_000_000_000L,
                    0x8000_0000_0000_0001L),
            new Message.Revoke(11, 17, 2));

    private final MemorySegment buf = Arena.ofAuto().allocate(MessageCodec.MAX_MESSAGE);

    @Test
    void everyMessageRoundTrips() throws Exception {
        for (Message m : SAMPLES) {
            int n = MessageCodec.encode(m, buf);
            assertEquals(m, MessageCodec.decode(buf.asSlice(0, n)));
        }
    }

    @Test
    void theLayoutsAreTheDocumentedSizes() {
        assertEquals(24, MessageCodec.HEADER.byteSize());
        assertEquals(32, MessageCodec.REQUEST.byteSize());
        assertEquals(40, MessageCodec.GRANT.byteSize());
        assertEquals(48, MessageCodec.OFFER.byteSize(), "version 4: the tag after the duration");
        int n = MessageCodec.encode(SAMPLES.getFirst(), buf);
        assertEquals(56, n);
        assertEquals(0x4d, buf.get(ValueLayout.JAVA_BYTE, 0), "network byte order: 'M' first");
    }

    /** The wire codes are fixed numbers: reordering the enums must not change what a peer reads. */
    @Test
    void typeAndEndReasonCodesAreTheDocumentedNumbers() {
        List<Integer> codes = List.of(0, 1, 2, 3, 4, 5, 7, 8, 9, 10); // 6 was version 2's REVOKED
        for (int i = 0; i < SAMPLES.size(); i++) {
            MessageCodec.encode(SAMPLES.get(i), buf);
            assertEquals((int) codes.get(i), buf.get(ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.BIG_ENDIAN), 6),
                    SAMPLES.get(i).toString());
        }
        assertEquals(List.of(0, 1, 2, 3, 4), java.util.Arrays.stream(EndReason.values()).map(EndReason::code).toList());
    }

    @Test
    void longErrorTextsAreCutOnACharacterBoundary() throws Exception {
        int n = MessageCodec.encode(new Message.Error(1, 1, "é".repeat(500)), buf);
        var e = (Message.Error) MessageCodec.decode(buf.asSlice(0, n));
        assertEquals("é".repeat(100), e.message());
    }

    @Test
    void eachFaultIsNamed() {
        int n = MessageCodec.encode(SAMPLES.getFirst(), buf);
        assertFault(buf.asSlice(0, 10), "truncated");
        assertFault(Arena.ofAuto().allocate(300), "oversized");
        assertFault(mutate(n, 0, (byte) 0), "bad magic");
        assertFault(mutate(n, 5, (byte) 9), "unsupported protocol version 9");
        assertFault(mutate(n, 7, (byte) 99), "unknown message type 99");
        assertFault(buf.asSlice(0, n - 1), "says 56 bytes but 55 arrived");
        assertFault(mutate(n, 12, (byte) 1), "reserved header bits set");
        assertFault(mutate(n, 24, (byte) 0x80), "size must be positive");
        assertFault(mutate(n, 43, (byte) 0x0f), "access 0xf is not");
        assertFault(mutate(n, 47, (byte) 1), "reserved bits set");
        assertFault(mutate(n, 39, (byte) 3), "alignment 3 is not a power of two");
    }

    /** A REVOKE names why the lease ends with a known {@link EndReason} code, and nothing else. */
    @Test
    void aRevokeWithAnUnknownReasonIsMalformed() throws Exception {
        int n = MessageCodec.encode(new Message.Revoke(7, 17, EndReason.EXPIRED.code()), buf);
        assertEquals(new Message.Revoke(7, 17, 1), MessageCodec.decode(buf.asSlice(0, n)));
        assertFault(mutate(n, 35, (byte) 5), "unknown end reason 5");
    }

    /** A CREDIT's count is a u32 on the wire: one of 2^31 or more is no int credit count, not a negative one. */
    @Test
    void aCreditTooLargeForAnIntIsMalformed() throws Exception {
        int n = MessageCodec.encode(new Message.Credit(7, Integer.MAX_VALUE), buf);
        assertEquals(Integer.MAX_VALUE, ((Message.Credit) MessageCodec.decode(buf.asSlice(0, n))).messages());
        assertFault(mutate(n, 24, (byte) 0x80), "a credit of 2164260863 messages exceeds");
    }

    private MemorySegment mutate(int n, int offset, byte value) {
        MemorySegment copy = Arena.ofAuto().allocate(n);
        copy.copyFrom(buf.asSlice(0, n));
        copy.set(ValueLayout.JAVA_BYTE, offset, value);
        return copy;
    }

    private static void assertFault(MemorySegment frame, String expected) {
        var e = assertThrows(MalformedMessageException.class, () -> MessageCodec.decode(frame));
        assertTrue(e.getMessage().contains(expected), () -> "expected '" + expected + "' in: " + e.getMessage());
    }

    /** A quick subset of the fuzz run: random and mutated frames decode or fail with a named fault, nothing else. */
    @Test
    void fuzzedFramesNeverEscapeAsAnythingButMalformed() {
        var random = new Random(20261122);
        MemorySegment frame = Arena.ofAuto().allocate(MessageCodec.MAX_MESSAGE);
        int decoded = 0;
        for (int i = 0; i < 100_000; i++) {
            int n;
            if (random.nextBoolean()) {
                n = MessageCodec.encode(SAMPLES.get(random.nextInt(SAMPLES.size())), frame);
                for (int flips = 1 + random.nextInt(3); flips > 0; flips--) {
                    frame.set(ValueLayout.JAVA_BYTE, random.nextInt(n), (byte) random.nextInt());
                }
                if (random.nextInt(4) == 0) n = random.nextInt(n + 1);
            } else {
                n = random.nextInt(MessageCodec.MAX_MESSAGE + 1);
                for (int k = 0; k < n; k++) frame.set(ValueLayout.JAVA_BYTE, k, (byte) random.nextInt());
            }
            try {
                MessageCodec.decode(frame.asSlice(0, n));
                decoded++;
            } catch (MalformedMessageException expected) {
                // named fault: fine
            }
        }
        assertTrue(decoded > 0, "some mutations (e.g. of ids) still decode");
    }
}
