package io.mooring.verbs;

import java.nio.ByteBuffer;

/**
 * What two peers exchange to connect their reliable-connected queue pairs (out of band, e.g. over a TCP
 * bootstrap): the queue pair number, starting packet sequence number, and the port's address.
 *
 * @param qpn  queue pair number
 * @param psn  initial packet sequence number (24 bits)
 * @param gid  port GID (RoCE: the IP address)
 * @param lid  port LID (InfiniBand; 0 on RoCE; the fabric's TCP port for the {@code soft} provider)
 * @param mtu  the port's active MTU; the path MTU is the smaller of both peers'
 */
public record QpInfo(int qpn, int psn, Gid gid, int lid, Mtu mtu) {
    /** Size of {@link #writeTo}'s encoding. */
    public static final int BYTES = 4 + 4 + Gid.BYTES + 4 + 4;

    public QpInfo {
        if ((psn & ~0xff_ffff) != 0) throw new IllegalArgumentException("psn is 24 bits, was " + psn);
    }

    /** Writes the fixed {@value #BYTES}-byte big-endian encoding. */
    public ByteBuffer writeTo(ByteBuffer out) {
        return out.putInt(qpn).putInt(psn).putLong(gid.subnetPrefix()).putLong(gid.interfaceId()).putInt(lid)
                .putInt(mtu.code());
    }

    /** Reads what {@link #writeTo} wrote. */
    public static QpInfo readFrom(ByteBuffer in) {
        return new QpInfo(in.getInt(), in.getInt(), new Gid(in.getLong(), in.getLong()), in.getInt(),
                Mtu.of(in.getInt()));
    }
}
