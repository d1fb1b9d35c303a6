package io.mooring.lease;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * The binary encoding of {@link Message}s, declared as FFM struct layouts (network byte order) so that the
 * wire format is written down once and read with bounds-checked accessors:
 * <pre>
 * header   magic:u32 "MLSE"  version:u16  type:u16  length:u32  reserved:u32  requestId:u64     (24 bytes)
 * REQUEST      size:u64  alignment:u64  access:u32  reserved:u32  durationNanos:u64            (32)
 * GRANT        leaseId:u64  address:u64  length:u64  rkey:u32  reserved:u32  durationNanos:u64 (40)
 * RENEW, RENEWED   leaseId:u64  durationNanos:u64                                            (16)
 * RELEASE, RELEASE_ACK   leaseId:u64                                                          (8)
 * CREDIT       messages:u32  reserved:u32                                                       (8)
 * OFFER        leaseId:u64  address:u64  length:u64  rkey:u32  access:u32  durationNanos:u64   (40)
 * ERROR        code:u32  messageLength:u32  message:utf8[messageLength ≤ 200]                 (8 + n)
 * REVOKE       leaseId:u64  reason:u32  reserved:u32                                          (16)
 * </pre>
 * {@link #decode} accepts exactly this and nothing else: wrong magic, version, type or length, a truncated or
 * oversized frame, non-zero reserved fields, unknown access bits or end reasons, non-positive sizes or durations and
 * a credit above 2^31 - 1 are
 * {@link MalformedMessageException}s naming the fault — never any other exception.
 */
final class MessageCodec {
    static final int MAGIC = 0x4d4c5345; // "MLSE"
    static final short VERSION = 4; // 4: OFFER carries a tag; 3: REVOKE asks the holder to stop (2: REVOKED after)
    static final int MAX_MESSAGE = 256;
    static final int MAX_ERROR_TEXT = 200;
    /** The access bits a lease may ask for: REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC. */
    static final int LEASE_ACCESS_BITS = 0b1110;

    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    static final StructLayout HEADER = MemoryLayout.structLayout(U32.withName("magic"), U16.withName("version"),
            U16.withName("type"), U32.withName("length"), U32.withName("reserved"), U64.withName("requestId"));
    static final StructLayout REQUEST = MemoryLayout.structLayout(U64.withName("size"), U64.withName("alignment"),
            U32.withName("access"), U32.withName("reserved"), U64.withName("durationNanos"));
    static final StructLayout GRANT = MemoryLayout.structLayout(U64.withName("leaseId"), U64.withName("address"),
            U64.withName("length"), U32.withName("rkey"), U32.withName("reserved"), U64.withName("durationNanos"));
    static final StructLayout LEASE_DURATION = MemoryLayout.structLayout(U64.withName("leaseId"),
            U64.withName("durationNanos"));
    static final StructLayout LEASE = MemoryLayout.structLayout(U64.withName("leaseId"));
    static final StructLayout REVOKE = MemoryLayout.structLayout(U64.withName("leaseId"), U32.withName("reason"),
            U32.withName("reserved"));
    static final StructLayout OFFER = MemoryLayout.structLayout(U64.withName("leaseId"), U64.withName("address"),
            U64.withName("length"), U32.withName("rkey"), U32.withName("access"), U64.withName("durationNanos"),
            U64.withName("tag"));
    static final StructLayout CREDIT = MemoryLayout.structLayout(U32.withName("messages"), U32.withName("reserved"));
    static final StructLayout ERROR = MemoryLayout.structLayout(U32.withName("code"), U32.withName("messageLength"));

    /** Message types on the wire, each with its fixed code (never its position in this list; 6 was version 2's REVOKED). */
    enum Type {
        REQUEST(0, MessageCodec.REQUEST), GRANT(1, MessageCodec.GRANT), RENEW(2, LEASE_DURATION),
        RENEWED(3, LEASE_DURATION), RELEASE(4, LEASE), RELEASE_ACK(5, LEASE), ERROR(7, MessageCodec.ERROR),
        CREDIT(8, MessageCodec.CREDIT), OFFER(9, MessageCodec.OFFER), REVOKE(10, MessageCodec.REVOKE);

        final int code;
        final StructLayout body;

        Type(int code, StructLayout body) {
            this.code = code;
            this.body = body;
        }

        private static final Type[] ALL = values(); // values() copies its array on every call

        /** The type with {@code code}, or null. */
        static Type of(int code) {
            for (Type t : ALL) if (t.code == code) return t;
            return null;
        }
    }

    private static final long HEADER_SIZE = HEADER.byteSize();
    private static final VarHandle H_MAGIC = field(HEADER, "magic");
    private static final VarHandle H_VERSION = field(HEADER, "version");
    private static final VarHandle H_TYPE = field(HEADER, "type");
    private static final VarHandle H_LENGTH = field(HEADER, "length");
    private static final VarHandle H_RESERVED = field(HEADER, "reserved");
    private static final VarHandle H_REQUEST_ID = field(HEADER, "requestId");

    // Field offsets inside each body, named after the layout and member.
    private static final long OFFER_ACCESS = offset(OFFER, "access");
    private static final long OFFER_ADDRESS = offset(OFFER, "address");
    private static final long OFFER_DURATION_NANOS = offset(OFFER, "durationNanos");
    private static final long OFFER_LEASE_ID = offset(OFFER, "leaseId");
    private static final long OFFER_LENGTH = offset(OFFER, "length");
    private static final long OFFER_RKEY = offset(OFFER, "rkey");
    private static final long OFFER_TAG = offset(OFFER, "tag");
    private static final long CREDIT_MESSAGES = offset(CREDIT, "messages");
    private static final long CREDIT_RESERVED = offset(CREDIT, "reserved");
    private static final long ERROR_CODE = offset(ERROR, "code");
    private static final long ERROR_MESSAGE_LENGTH = offset(ERROR, "messageLength");
    private static final long GRANT_ADDRESS = offset(GRANT, "address");
    private static final long GRANT_DURATION_NANOS = offset(GRANT, "durationNanos");
    private static final long GRANT_LEASE_ID = offset(GRANT, "leaseId");
    private static final long GRANT_LENGTH = offset(GRANT, "length");
    private static final long GRANT_RESERVED = offset(GRANT, "reserved");
    private static final long GRANT_RKEY = offset(GRANT, "rkey");
    private static final long LEASE_DURATION_DURATION_NANOS = offset(LEASE_DURATION, "durationNanos");
    private static final long LEASE_DURATION_LEASE_ID = offset(LEASE_DURATION, "leaseId");
    private static final long LEASE_LEASE_ID = offset(LEASE, "leaseId");
    private static final long REQUEST_ACCESS = offset(REQUEST, "access");
    private static final long REQUEST_ALIGNMENT = offset(REQUEST, "alignment");
    private static final long REQUEST_DURATION_NANOS = offset(REQUEST, "durationNanos");
    private static final long REQUEST_RESERVED = offset(REQUEST, "reserved");
    private static final long REQUEST_SIZE = offset(REQUEST, "size");
    private static final long REVOKE_LEASE_ID = offset(REVOKE, "leaseId");
    private static final long REVOKE_REASON = offset(REVOKE, "reason");
    private static final long REVOKE_RESERVED = offset(REVOKE, "reserved");

    private MessageCodec() {}

    private static VarHandle field(StructLayout layout, String name) {
        return layout.varHandle(groupElement(name)).withInvokeExactBehavior();
    }

    private static long offset(StructLayout layout, String name) {
        return layout.byteOffset(groupElement(name));
    }

    /** Encodes {@code m} at the start of {@code out}; returns its length in bytes. */
    static int encode(Message m, MemorySegment out) {
        Type type = typeOf(m);
        byte[] text = m instanceof Message.Error e ? errorText(e.message()) : new byte[0];
        int length = (int) (HEADER_SIZE + type.body.byteSize() + text.length);
        MemorySegment frame = out.asSlice(0, length);
        frame.fill((byte) 0);
        H_MAGIC.set(frame, 0L, MAGIC);
        H_VERSION.set(frame, 0L, VERSION);
        H_TYPE.set(frame, 0L, (short) type.code);
        H_LENGTH.set(frame, 0L, length);
        H_REQUEST_ID.set(frame, 0L, m.requestId());
        MemorySegment body = frame.asSlice(HEADER_SIZE);
        switch (m) {
            case Message.Request r -> {
                body.set(U64, REQUEST_SIZE, r.size());
                body.set(U64, REQUEST_ALIGNMENT, r.alignment());
                body.set(U32, REQUEST_ACCESS, r.access());
                body.set(U64, REQUEST_DURATION_NANOS, r.durationNanos());
            }
            case Message.Grant g -> {
                body.set(U64, GRANT_LEASE_ID, g.leaseId());
                body.set(U64, GRANT_ADDRESS, g.address());
                body.set(U64, GRANT_LENGTH, g.length());
                body.set(U32, GRANT_RKEY, g.rkey());
                body.set(U64, GRANT_DURATION_NANOS, g.durationNanos());
            }
            case Message.Renew r -> leaseDuration(body, r.leaseId(), r.durationNanos());
            case Message.Renewed r -> leaseDuration(body, r.leaseId(), r.durationNanos());
            case Message.Release r -> body.set(U64, LEASE_LEASE_ID, r.leaseId());
            case Message.ReleaseAck r -> body.set(U64, LEASE_LEASE_ID, r.leaseId());
            case Message.Revoke r -> {
                body.set(U64, REVOKE_LEASE_ID, r.leaseId());
                body.set(U32, REVOKE_REASON, r.reason());
            }
            case Message.Credit c -> body.set(U32, CREDIT_MESSAGES, c.messages());
            case Message.Offer o -> {
                body.set(U64, OFFER_LEASE_ID, o.leaseId());
                body.set(U64, OFFER_ADDRESS, o.address());
                body.set(U64, OFFER_LENGTH, o.length());
                body.set(U32, OFFER_RKEY, o.rkey());
                body.set(U32, OFFER_ACCESS, o.access());
                body.set(U64, OFFER_DURATION_NANOS, o.durationNanos());
                body.set(U64, OFFER_TAG, o.tag());
            }
            case Message.Error e -> {
                body.set(U32, ERROR_CODE, e.code());
                body.set(U32, ERROR_MESSAGE_LENGTH, text.length);
                MemorySegment.copy(text, 0, body, ValueLayout.JAVA_BYTE, ERROR.byteSize(), text.length);
            }
        }
        return length;
    }

    private static void leaseDuration(MemorySegment body, long leaseId, long durationNanos) {
        body.set(U64, LEASE_DURATION_LEASE_ID, leaseId);
        body.set(U64, LEASE_DURATION_DURATION_NANOS, durationNanos);
    }

    /** UTF-8 of an error text, cut to at most {@value #MAX_ERROR_TEXT} bytes on a character boundary. */
    private static byte[] errorText(String text) {
        String t = text.length() > MAX_ERROR_TEXT ? text.substring(0, MAX_ERROR_TEXT) : text;
        byte[] b = t.getBytes(StandardCharsets.UTF_8);
        while (b.length > MAX_ERROR_TEXT) {
            t = t.substring(0, t.length() - 1);
            b = t.getBytes(StandardCharsets.UTF_8);
        }
        return b;
    }

    private static Type typeOf(Message m) {
        return switch (m) {
            case Message.Request r -> Type.REQUEST;
            case Message.Grant g -> Type.GRANT;
            case Message.Renew r -> Type.RENEW;
            case Message.Renewed r -> Type.RENEWED;
            case Message.Release r -> Type.RELEASE;
            case Message.ReleaseAck r -> Type.RELEASE_ACK;
            case Message.Revoke r -> Type.REVOKE;
            case Message.Error e -> Type.ERROR;
            case Message.Credit c -> Type.CREDIT;
            case Message.Offer o -> Type.OFFER;
        };
    }

    /**
     * Decodes the {@code received} bytes of one SEND.
     *
     * @throws MalformedMessageException naming what is wrong; the request id is included when it could be read,
     *                                   so the agent can answer with an ERROR
     */
    static Message decode(MemorySegment received) throws MalformedMessageException {
        long n = received.byteSize();
        if (n < HEADER_SIZE) throw new MalformedMessageException(0, "truncated: " + n + " bytes, the header has " + HEADER_SIZE);
        if (n > MAX_MESSAGE) throw new MalformedMessageException(0, "oversized: " + n + " bytes, at most " + MAX_MESSAGE);
        long requestId = (long) H_REQUEST_ID.get(received, 0L);
        int magic = (int) H_MAGIC.get(received, 0L);
        if (magic != MAGIC) throw new MalformedMessageException(requestId, "bad magic 0x" + Integer.toHexString(magic));
        short version = (short) H_VERSION.get(received, 0L);
        if (version != VERSION) {
            throw new MalformedMessageException(requestId, "unsupported protocol version " + version + " (this side speaks " + VERSION + ")");
        }
        int typeCode = Short.toUnsignedInt((short) H_TYPE.get(received, 0L));
        Type type = Type.of(typeCode);
        if (type == null) throw new MalformedMessageException(requestId, "unknown message type " + typeCode);
        int length = (int) H_LENGTH.get(received, 0L);
        if (length != n) throw new MalformedMessageException(requestId, type + " says " + length + " bytes but " + n + " arrived");
        if ((int) H_RESERVED.get(received, 0L) != 0) throw new MalformedMessageException(requestId, "reserved header bits set");
        MemorySegment body = received.asSlice(HEADER_SIZE);
        long fixed = type.body.byteSize();
        if (type != Type.ERROR && body.byteSize() != fixed || body.byteSize() < fixed) {
            throw new MalformedMessageException(requestId, type + " body has " + body.byteSize() + " bytes, expected " + fixed);
        }
        return switch (type) {
            case REQUEST -> request(requestId, body);
            case GRANT -> grant(requestId, body);
            case RENEW -> new Message.Renew(requestId, leaseId(requestId, body, LEASE_DURATION_LEASE_ID),
                    positive(requestId, "duration", body.get(U64, LEASE_DURATION_DURATION_NANOS)));
            case RENEWED -> new Message.Renewed(requestId, leaseId(requestId, body, LEASE_DURATION_LEASE_ID),
                    positive(requestId, "duration", body.get(U64, LEASE_DURATION_DURATION_NANOS)));
            case RELEASE -> new Message.Release(requestId, leaseId(requestId, body, LEASE_LEASE_ID));
            case RELEASE_ACK -> new Message.ReleaseAck(requestId, leaseId(requestId, body, LEASE_LEASE_ID));
            case REVOKE -> {
                if (body.get(U32, REVOKE_RESERVED) != 0) throw new MalformedMessageException(requestId, "reserved bits set");
                int reason = body.get(U32, REVOKE_REASON);
                if (EndReason.of(reason) == null) throw new MalformedMessageException(requestId, "unknown end reason " + reason);
                yield new Message.Revoke(requestId, leaseId(requestId, body, REVOKE_LEASE_ID), reason);
            }
            case ERROR -> error(requestId, body);
            case OFFER -> new Message.Offer(requestId, leaseId(requestId, body, OFFER_LEASE_ID),
                    body.get(U64, OFFER_ADDRESS), positive(requestId, "length", body.get(U64, OFFER_LENGTH)),
                    body.get(U32, OFFER_RKEY), access(requestId, body.get(U32, OFFER_ACCESS)),
                    positive(requestId, "duration", body.get(U64, OFFER_DURATION_NANOS)), body.get(U64, OFFER_TAG));
            case CREDIT -> {
                if (body.get(U32, CREDIT_RESERVED) != 0) throw new MalformedMessageException(requestId, "reserved bits set");
                long credit = positive(requestId, "credit", Integer.toUnsignedLong(body.get(U32, CREDIT_MESSAGES)));
                if (credit > Integer.MAX_VALUE) {
                    throw new MalformedMessageException(requestId, "a credit of " + credit + " messages exceeds "
                            + Integer.MAX_VALUE);
                }
                yield new Message.Credit(requestId, (int) credit);
            }
        };
    }

    private static Message request(long requestId, MemorySegment body) throws MalformedMessageException {
        long size = positive(requestId, "size", body.get(U64, REQUEST_SIZE));
        long alignment = body.get(U64, REQUEST_ALIGNMENT);
        if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
            throw new MalformedMessageException(requestId, "alignment " + alignment + " is not a power of two");
        }
        int access = access(requestId, body.get(U32, REQUEST_ACCESS));
        if (body.get(U32, REQUEST_RESERVED) != 0) throw new MalformedMessageException(requestId, "reserved bits set");
        return new Message.Request(requestId, size, alignment, access,
                positive(requestId, "duration", body.get(U64, REQUEST_DURATION_NANOS)));
    }

    private static int access(long requestId, int access) throws MalformedMessageException {
        if (access == 0 || (access & ~LEASE_ACCESS_BITS) != 0) {
            throw new MalformedMessageException(requestId, "access 0x" + Integer.toHexString(access)
                    + " is not a non-empty set of REMOTE_WRITE, REMOTE_READ, REMOTE_ATOMIC");
        }
        return access;
    }

    private static Message grant(long requestId, MemorySegment body) throws MalformedMessageException {
        if (body.get(U32, GRANT_RESERVED) != 0) throw new MalformedMessageException(requestId, "reserved bits set");
        return new Message.Grant(requestId, leaseId(requestId, body, GRANT_LEASE_ID), body.get(U64, GRANT_ADDRESS),
                positive(requestId, "length", body.get(U64, GRANT_LENGTH)), body.get(U32, GRANT_RKEY),
                positive(requestId, "duration", body.get(U64, GRANT_DURATION_NANOS)));
    }

    private static Message error(long requestId, MemorySegment body) throws MalformedMessageException {
        int textLength = body.get(U32, ERROR_MESSAGE_LENGTH);
        if (textLength < 0 || textLength > MAX_ERROR_TEXT || body.byteSize() != ERROR.byteSize() + textLength) {
            throw new MalformedMessageException(requestId, "ERROR text of " + textLength + " bytes in a body of "
                    + body.byteSize());
        }
        byte[] text = body.asSlice(ERROR.byteSize(), textLength).toArray(ValueLayout.JAVA_BYTE);
        return new Message.Error(requestId, body.get(U32, ERROR_CODE), new String(text, StandardCharsets.UTF_8));
    }

    private static long leaseId(long requestId, MemorySegment body, long offset) throws MalformedMessageException {
        return positive(requestId, "lease id", body.get(U64, offset));
    }

    private static long positive(long requestId, String what, long value) throws MalformedMessageException {
        if (value <= 0) throw new MalformedMessageException(requestId, what + " must be positive, was " + value);
        return value;
    }
}
