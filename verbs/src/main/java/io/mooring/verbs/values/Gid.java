package io.mooring.verbs.values;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;

/**
 * A 128-bit global identifier of a port ({@code union ibv_gid}), held as two big-endian halves. For RoCE v2 it
 * is an IPv6 address, or an IPv4 address mapped into IPv6 ({@code ::ffff:a.b.c.d}).
 */
public record Gid(long subnetPrefix, long interfaceId) {
    public static final Gid ZERO = new Gid(0, 0);
    public static final int BYTES = 16;

    /** The GID of an IPv4 or IPv6 address (IPv4 as {@code ::ffff:a.b.c.d}). */
    public static Gid of(InetAddress address) {
        byte[] raw = address.getAddress();
        if (address instanceof Inet4Address) {
            return new Gid(0, 0xffff_0000_0000L | (ByteBuffer.wrap(raw).getInt() & 0xffff_ffffL));
        }
        ByteBuffer b = ByteBuffer.wrap(raw);
        return new Gid(b.getLong(), b.getLong());
    }

    /** The GID in its 16 wire bytes. */
    public static Gid of(byte[] raw) {
        if (raw.length != BYTES) throw new IllegalArgumentException("a GID has 16 bytes, not " + raw.length);
        ByteBuffer b = ByteBuffer.wrap(raw);
        return new Gid(b.getLong(), b.getLong());
    }

    /** Its 16 wire bytes. */
    public byte[] bytes() {
        return ByteBuffer.allocate(BYTES).putLong(subnetPrefix).putLong(interfaceId).array();
    }

    /** Whether it is an IPv4-mapped address. */
    public boolean isIpv4Mapped() {
        return subnetPrefix == 0 && (interfaceId >>> 32) == 0xffff;
    }

    /** The IP address it encodes. */
    public InetAddress address() {
        try {
            return InetAddress.getByAddress(isIpv4Mapped()
                    ? ByteBuffer.allocate(4).putInt((int) interfaceId).array() : bytes());
        } catch (UnknownHostException e) {
            throw new AssertionError("4 or 16 bytes are always an address", e);
        }
    }

    @Override
    public String toString() {
        if (isIpv4Mapped()) return "::ffff:" + address().getHostAddress();
        var s = new StringBuilder();
        for (int i = 0; i < 8; i++) {
            long half = i < 4 ? subnetPrefix : interfaceId;
            if (i > 0) s.append(':');
            s.append(String.format("%04x", (half >>> (48 - 16 * (i % 4))) & 0xffff));
        }
        return s.toString();
    }
}
