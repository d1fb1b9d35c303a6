package io.mooring.lease;

import java.net.Inet4Address;
import java.net.InetAddress;

/**
 * Which addresses count as one peer: its account — sessions, handshakes, leases, failures — is kept per address
 * prefix, so that a peer holding many addresses cannot dodge its limits by rotating them. By default an IPv4 address
 * is a peer of its own (/32: a second one costs a second host or an administrator's grant), an IPv6 peer is its /64
 * (what one host gets to pick addresses from by itself), and all of IPv4's loopback, 127/8, is one peer — any local
 * process may bind any of its addresses — while ::1 counts by the IPv6 rule. (An IPv4-mapped IPv6 address reaches
 * Java as its IPv4 address.)
 */
record PeerPrefix(int ipv4Bits, int ipv6Bits) {
    static final PeerPrefix DEFAULT = new PeerPrefix(32, 64);

    PeerPrefix {
        if (ipv4Bits < 0 || ipv4Bits > 32) {
            throw new IllegalArgumentException("an IPv4 prefix is 0..32 bits, was " + ipv4Bits);
        }
        if (ipv6Bits < 0 || ipv6Bits > 128) {
            throw new IllegalArgumentException("an IPv6 prefix is 0..128 bits, was " + ipv6Bits);
        }
    }

    /**
     * The peer {@code address} belongs to, named as its prefix (e.g. {@code 203.0.113.7/32},
     * {@code 2001:db8:0:0:0:0:0:0/64}, {@code 127.0.0.0/8}).
     */
    String of(InetAddress address) {
        byte[] bytes = address.getAddress();
        int bits = address instanceof Inet4Address ? (address.isLoopbackAddress() ? 8 : ipv4Bits) : ipv6Bits;
        for (int i = 0; i < bytes.length; i++) {
            int keep = Math.clamp(bits - 8L * i, 0, 8);
            bytes[i] &= (byte) (0xff00 >> keep);
        }
        try {
            return InetAddress.getByAddress(bytes).getHostAddress() + "/" + bits;
        } catch (java.net.UnknownHostException e) {
            throw new AssertionError(e); // 4 or 16 bytes are always an address
        }
    }
}
