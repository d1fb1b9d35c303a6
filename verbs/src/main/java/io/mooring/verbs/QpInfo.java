package io.mooring.verbs;

import io.mooring.verbs.values.Gid;
import io.mooring.verbs.values.Mtu;
import io.mooring.verbs.values.QpAttributes;
import java.nio.ByteBuffer;

/**
 * What two peers exchange to connect their reliable-connected queue pairs (out of band, e.g. over a TCP
 * bootstrap): the queue pair number, starting packet sequence number, the port's address, and the secret that
 * lets the peer in. Take it after the QP's last reset: a reset changes the token.
 *
 * @param qpn   queue pair number
 * @param psn   initial packet sequence number (24 bits)
 * @param gid   port GID (RoCE: the IP address)
 * @param lid   port LID (InfiniBand; 0 on RoCE; the fabric's TCP port for the {@code soft} provider)
 * @param mtu   the port's active MTU; the path MTU is the smaller of both peers'
 * @param token what the peer must present to reach this QP where the transport itself does not tell who is
 *              talking: on the {@code soft} provider's TCP fabric, which anyone on the host can connect to, a
 *              random 64-bit secret, new after every reset; 0 on {@code ibv}
 */
public record QpInfo(int qpn, int psn, Gid gid, int lid, Mtu mtu, long token) {
    /** Size of {@link #writeTo}'s encoding. */
    public static final int BYTES = 4 + 4 + Gid.BYTES + 4 + 4 + 8;

    public QpInfo {
        QpAttributes.inRange(psn, 0, QpAttributes.MAX_PSN, "psn");
    }

    /** Writes the fixed {@value #BYTES}-byte big-endian encoding. */
    public ByteBuffer writeTo(ByteBuffer out) {
        return out.putInt(qpn).putInt(psn).putLong(gid.subnetPrefix()).putLong(gid.interfaceId()).putInt(lid)
                .putInt(mtu.code()).putLong(token);
    }

    /** Reads what {@link #writeTo} wrote. */
    public static QpInfo readFrom(ByteBuffer in) {
        return new QpInfo(in.getInt(), in.getInt(), new Gid(in.getLong(), in.getLong()), in.getInt(),
                Mtu.of(in.getInt()), in.getLong());
    }
}
