package io.mooring.verbs.values;

/**
 * What a provider reads of a work request's local buffers ({@code struct ibv_sge[]}): address, length and lkey per
 * entry. {@link io.mooring.verbs.ScatterGatherList} is the list requests are built with.
 */
public interface SgeList {
    /** Entries per list; devices allow fewer (see {@link DeviceAttributes#maxSge()}). */
    int CAPACITY = 16;

    int count();

    long address(int i);

    int length(int i);

    int lkey(int i);

    /** Sum of the entries' lengths. */
    long totalLength();
}
