package io.mooring.verbs.values;

import java.util.List;

/**
 * One port of a device ({@code struct ibv_port_attr} and its GID table).
 *
 * @param port      port number, from 1
 * @param active    whether the port state is ACTIVE
 * @param activeMtu the MTU in use
 * @param lid       local identifier (InfiniBand; 0 on RoCE; the TCP port of the {@code soft} provider's fabric)
 * @param linkLayer "InfiniBand", "Ethernet" or "TCP"
 * @param gids      the GID table; index 1 is the RoCE v2 IPv4 GID on rxe
 * @param pkeyTableLength entries of the P_Key (partition) table, {@code pkey_tbl_len}: the limit of
 *                  {@link io.mooring.verbs.ConnectOptions#pkeyIndex()}
 */
public record PortAttributes(int port, boolean active, Mtu activeMtu, int lid, String linkLayer, List<Gid> gids,
                             int pkeyTableLength) {
    public PortAttributes {
        gids = List.copyOf(gids);
    }
}
