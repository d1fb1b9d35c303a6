package io.mooring.verbs;

/** What a work completion says about itself besides its status ({@code enum ibv_wc_flags}). */
public enum WcFlag {
    /** The packet carried a global route header (UD receives; mlx5 also sets it on RoCE receives). */
    GRH(1),
    /** The completion carries immediate data ({@link WorkCompletion#immediate()}). rxe also sets it on the sender's. */
    WITH_IMM(1 << 1),
    /** The NIC verified the IP checksum of a received packet (raw Ethernet/UD offload). */
    IP_CSUM_OK(1 << 2),
    /** A SEND_WITH_INV invalidated a key on receipt. */
    WITH_INV(1 << 3);

    private final int bit;

    WcFlag(int bit) {
        this.bit = bit;
    }

    /** The verbs bit ({@code IBV_WC_*}). */
    public int bit() {
        return bit;
    }
}
